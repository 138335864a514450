//! Field-name rules shared by projection and truncation.

/// Identifier-like fields are what the next call needs as arguments; a reduction that drops
/// one produces a failure that only shows up a turn later, so they are always kept whole.
pub fn is_identifier(key: &str) -> bool {
    let lower = key.to_ascii_lowercase();
    if matches!(
        lower.as_str(),
        "id" | "ids" | "uuid" | "guid" | "uri" | "uris" | "url" | "urls" | "href" | "cursor"
    ) {
        return true;
    }
    if lower.ends_with("cursor") || lower.ends_with("pagetoken") || lower.ends_with("page_token") {
        return true;
    }
    if lower.ends_with("_id") || lower.ends_with("_ids") || lower.ends_with("-id") {
        return true;
    }
    if lower.ends_with("_uri") || lower.ends_with("_url") {
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
    let norm: String = key
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .map(|c| c.to_ascii_lowercase())
        .collect();
    matches!(
        norm.as_str(),
        "password"
            | "passwd"
            | "pwd"
            | "secret"
            | "clientsecret"
            | "apikey"
            | "xapikey"
            | "apisecret"
            | "accesstoken"
            | "refreshtoken"
            | "authtoken"
            | "sessiontoken"
            | "privatekey"
            | "secretkey"
            | "secretaccesskey"
            | "authorization"
    )
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
