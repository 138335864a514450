//! Field-name rules shared by projection and truncation.

/// Identifier-like fields are what the next call needs as arguments; a reduction that drops
/// one produces a failure that only shows up a turn later, so they are always kept whole.
pub fn is_identifier(key: &str) -> bool {
    // Allocation-free: this runs for every key of every result. Every name and suffix below
    // ends in one of these letters (any case), so most keys are answered by their last byte.
    let Some(&last) = key.as_bytes().last() else {
        return false;
    };
    if !matches!(
        last.to_ascii_lowercase(),
        b'd' | b's' | b'r' | b'i' | b'l' | b'n' | b'f'
    ) {
        return false;
    }
    let eq = |a: &str| key.eq_ignore_ascii_case(a);
    let ends = |suf: &str| {
        key.len() >= suf.len()
            && key.is_char_boundary(key.len() - suf.len())
            && key[key.len() - suf.len()..].eq_ignore_ascii_case(suf)
    };
    if [
        "id", "ids", "uuid", "guid", "uri", "uris", "url", "urls", "href", "cursor",
    ]
    .iter()
    .any(|k| eq(k))
    {
        return true;
    }
    if [
        "cursor",
        "pagetoken",
        "page_token",
        "_id",
        "_ids",
        "-id",
        "_uri",
        "_url",
    ]
    .iter()
    .any(|s| ends(s))
    {
        return true;
    }
    // camelCase suffixes: userId, userIDs, resourceUri, imageURIs, homeUrl.
    [
        "Id", "ID", "Ids", "IDs", "Uri", "URI", "Uris", "URIs", "Url", "URL",
    ]
    .iter()
    .any(|suf| key.len() > suf.len() && key.ends_with(suf))
}

/// Keys whose whole string value is a secret regardless of what it looks like.
pub fn is_secret_field(key: &str) -> bool {
    const NAMES: &[&str] = &[
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
    if key.len() > 24 {
        return false;
    }
    // Every name ends in one of these letters (`_` and `-` aside), so most keys are answered
    // by their last byte without being normalised.
    match key.bytes().rev().find(|b| *b != b'_' && *b != b'-') {
        Some(b) if matches!(b.to_ascii_lowercase(), b'd' | b't' | b'y' | b'n') => {}
        _ => return false,
    }
    let mut buf = [0u8; 24];
    let mut n = 0;
    for b in key.bytes().filter(|b| *b != b'_' && *b != b'-') {
        buf[n] = b.to_ascii_lowercase();
        n += 1;
    }
    let norm = &buf[..n];
    NAMES.iter().any(|k| k.as_bytes() == norm)
}

#[cfg(test)]
mod tests {
    use super::*;

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
