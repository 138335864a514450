//! Field-name rules shared by projection and truncation.

/// Whole keys that name an identifier, any case.
const IDENTIFIER_NAMES: &[&str] = &[
    "id", "ids", "uuid", "guid", "uri", "uris", "url", "urls", "href", "cursor",
];

/// Endings that make a key an identifier, any case.
const IDENTIFIER_ENDINGS: &[&str] = &[
    "cursor",
    "pagetoken",
    "page_token",
    "_id",
    "_ids",
    "-id",
    "_uri",
    "_url",
];

/// camelCase endings, this case only: userId, userIDs, resourceUri, imageURIs, homeUrl.
const IDENTIFIER_CAMEL_ENDINGS: &[&str] = &[
    "Id", "ID", "Ids", "IDs", "Uri", "URI", "Uris", "URIs", "Url", "URL",
];

/// The last letter, lower-cased, of every entry of the three lists above: a key ending in
/// any other is no identifier. A test holds the lists to it.
const IDENTIFIER_LAST_LETTERS: &[u8] = b"dsrilnf";

/// Identifier-like fields are what the next call needs as arguments; a reduction that drops
/// one produces a failure that only shows up a turn later, so they are always kept whole.
pub fn is_identifier(key: &str) -> bool {
    // Allocation-free: this runs for every key of every result, and most keys are answered by
    // their last byte.
    let Some(&last) = key.as_bytes().last() else {
        return false;
    };
    if !IDENTIFIER_LAST_LETTERS.contains(&last.to_ascii_lowercase()) {
        return false;
    }
    let ends = |suf: &str| {
        key.len() >= suf.len()
            && key.is_char_boundary(key.len() - suf.len())
            && key[key.len() - suf.len()..].eq_ignore_ascii_case(suf)
    };
    IDENTIFIER_NAMES.iter().any(|k| key.eq_ignore_ascii_case(k))
        || IDENTIFIER_ENDINGS.iter().any(|s| ends(s))
        || IDENTIFIER_CAMEL_ENDINGS
            .iter()
            .any(|suf| key.len() > suf.len() && key.ends_with(suf))
}

/// Keys whose whole string value is a secret regardless of what it looks like.
pub fn is_secret_field(key: &str) -> bool {
    if key.len() > 24 {
        return false;
    }
    // Most keys are answered by their last byte (`_` and `-` aside) without being normalised.
    match key.bytes().rev().find(|b| *b != b'_' && *b != b'-') {
        Some(b) if SECRET_LAST_LETTERS.contains(&b.to_ascii_lowercase()) => {}
        _ => return false,
    }
    let mut buf = [0u8; 24];
    let mut n = 0;
    for b in key.bytes().filter(|b| *b != b'_' && *b != b'-') {
        buf[n] = b.to_ascii_lowercase();
        n += 1;
    }
    let norm = &buf[..n];
    SECRET_NAMES.iter().any(|k| k.as_bytes() == norm)
}

/// Secret field names, lower case, without the `_` or `-` a key may have between words.
const SECRET_NAMES: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "secret",
    "clientsecret",
    "apikey",
    "xapikey",
    "apisecret",
    "accesstoken",
    "refreshtoken",
    "authtoken",
    "sessiontoken",
    "privatekey",
    "secretkey",
    "secretaccesskey",
    "authorization",
];

/// The last letter of every [`SECRET_NAMES`] entry; a test holds the list to it.
const SECRET_LAST_LETTERS: &[u8] = b"dtyn";

#[cfg(test)]
mod tests {
    use super::*;

    /// The last-letter shortcuts answer for every entry of the lists, in the spellings the
    /// lists allow: a letter missing from a shortcut (`l` drops `url`, `href`'s `f`) fails here.
    #[test]
    fn every_listed_name_gets_past_the_last_letter_shortcut() {
        for k in IDENTIFIER_NAMES.iter().chain(IDENTIFIER_ENDINGS) {
            let last = k.as_bytes()[k.len() - 1].to_ascii_lowercase();
            assert!(IDENTIFIER_LAST_LETTERS.contains(&last), "{k}");
            assert!(is_identifier(k), "{k}");
            assert!(is_identifier(&k.to_uppercase()), "{k}");
            assert!(
                is_identifier(&format!("x{k}")) || IDENTIFIER_NAMES.contains(k),
                "{k}"
            );
        }
        for suf in IDENTIFIER_CAMEL_ENDINGS {
            let last = suf.as_bytes()[suf.len() - 1].to_ascii_lowercase();
            assert!(IDENTIFIER_LAST_LETTERS.contains(&last), "{suf}");
            assert!(is_identifier(&format!("home{suf}")), "{suf}");
        }
        for k in SECRET_NAMES {
            assert!(
                SECRET_LAST_LETTERS.contains(&k.as_bytes()[k.len() - 1]),
                "{k}"
            );
            assert!(is_secret_field(k), "{k}");
            assert!(is_secret_field(&k.to_uppercase()), "{k}");
            assert!(is_secret_field(&format!("{k}_")), "{k}");
        }
    }

    #[test]
    fn identifiers() {
        for k in [
            "id",
            "userId",
            "user_id",
            "nextCursor",
            "cursor",
            "uri",
            "URIs",
            "resourceUri",
            "orderIDs",
            "nextPageToken",
        ] {
            assert!(is_identifier(k), "{k}");
        }
        for k in ["name", "idle", "valid", "rid", "hidden", "paid"] {
            assert!(!is_identifier(k), "{k}");
        }
    }

    #[test]
    fn secret_fields() {
        for k in [
            "password",
            "api_key",
            "apiKey",
            "client-secret",
            "Authorization",
        ] {
            assert!(is_secret_field(k), "{k}");
        }
        for k in ["passwordHint", "nextPageToken", "token_count", "key"] {
            assert!(!is_secret_field(k), "{k}");
        }
    }
}
