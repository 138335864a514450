//! Secrets and personal data out before anything enters the envelope.
//!
//! Whatever reaches context can reach the user, the logs and the next upstream, so this runs
//! on the whole result (including `_meta` and what goes to the store), not just the part
//! that survives the budget. One combined regex keeps the structural forms (key and value
//! pairs, URLs, cards, the oldest token forms) to a single scan per string; the forms issuers
//! give their credentials today, each behind a fixed prefix, are a second regex the engine
//! skips through by those prefixes ([`ISSUED`]).

use std::sync::OnceLock;

use regex::{Captures, Regex};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::fields::{is_identifier, is_secret_field};

#[cfg(feature = "accel")]
mod prefilter;

/// Whether `s` can hold anything the pattern matches. The plain build lets the pattern scan
/// every string; the `accel` build first asks a vectorized prefilter that passes only strings
/// with the bytes a match needs (its tests hold it to the pattern).
fn may_match(s: &str) -> bool {
    #[cfg(feature = "accel")]
    return prefilter::may_match(s);
    #[cfg(not(feature = "accel"))]
    {
        let _ = s;
        true
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RedactionKind {
    AwsAccessKey,
    AwsSecretKey,
    GithubToken,
    SlackToken,
    SlackWebhook,
    OpenaiKey,
    BearerToken,
    Jwt,
    PemPrivateKey,
    UrlPassword,
    Email,
    CardNumber,
    SecretField,
    /// A credential in a form its issuer documents: a fixed prefix and a body of a known
    /// alphabet and length (Stripe, Google, GitLab, npm, PyPI and the others of [`ISSUED`]).
    ApiToken,
}

const KINDS: [RedactionKind; 14] = [
    RedactionKind::AwsAccessKey,
    RedactionKind::AwsSecretKey,
    RedactionKind::GithubToken,
    RedactionKind::SlackToken,
    RedactionKind::SlackWebhook,
    RedactionKind::OpenaiKey,
    RedactionKind::BearerToken,
    RedactionKind::Jwt,
    RedactionKind::PemPrivateKey,
    RedactionKind::UrlPassword,
    RedactionKind::Email,
    RedactionKind::CardNumber,
    RedactionKind::SecretField,
    RedactionKind::ApiToken,
];

impl RedactionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RedactionKind::AwsAccessKey => "aws_access_key",
            RedactionKind::AwsSecretKey => "aws_secret_key",
            RedactionKind::GithubToken => "github_token",
            RedactionKind::SlackToken => "slack_token",
            RedactionKind::SlackWebhook => "slack_webhook",
            RedactionKind::OpenaiKey => "openai_key",
            RedactionKind::BearerToken => "bearer_token",
            RedactionKind::Jwt => "jwt",
            RedactionKind::PemPrivateKey => "pem_private_key",
            RedactionKind::UrlPassword => "url_password",
            RedactionKind::Email => "email",
            RedactionKind::CardNumber => "card_number",
            RedactionKind::SecretField => "secret_field",
            RedactionKind::ApiToken => "api_token",
        }
    }

    /// The text that replaces the secret. Contains no digits or `@`, so it never matches
    /// a pattern itself and redaction stays idempotent.
    pub fn marker(self) -> String {
        format!("[REDACTED:{}]", self.as_str())
    }
}

/// Counts per kind; the envelope reports counts, never the secrets.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tally([u64; 14]);

impl Tally {
    pub fn add(&mut self, kind: RedactionKind) {
        self.0[kind as usize] += 1;
    }

    pub fn count(&self, kind: RedactionKind) -> u64 {
        self.0[kind as usize]
    }

    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    pub fn merge(&mut self, other: &Tally) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a += b;
        }
    }

    pub fn to_list(&self) -> Vec<crate::envelope::Redaction> {
        KINDS
            .iter()
            .filter(|k| self.count(**k) > 0)
            .map(|k| crate::envelope::Redaction {
                kind: *k,
                count: self.count(*k),
            })
            .collect()
    }
}

/// The secret field names of [`is_secret_field`] as a case-insensitive regex, with the `_` or
/// `-` between words optional (`api_key`, `apiKey`, `api-key`). A macro so `concat!` can
/// splice it into the one pattern.
macro_rules! secret_keys {
    () => {
        r"(?i:passw(?:or)?d|pwd|(?:client[_\-]?|api[_\-]?)?secret|x[_\-]?api[_\-]?key|api[_\-]?key|(?:access|refresh|auth|session)[_\-]?token|(?:private|secret)[_\-]?key|secret[_\-]?access[_\-]?key|authorization)"
    };
}

// ASCII-only classes and `(?-u:\b)` keep the whole pattern inside the lazy DFA, which is
// what makes one scan of a 50 MB result affordable. Distinctive prefixes (AKIA, ghp_, xox,
// eyJ) need no leading word boundary: JSON carried as text puts `\n` right before them, and
// a boundary there would let the escaped copy of a secret through. Card numbers instead
// require a non-digit before them, so the tail of a longer digit run never matches.
//
// Key/value pairs in JSON (or a Python repr) carried as text: a secret-named key (the names
// of [`is_secret_field`], `_`/`-` optional) followed by a quoted value. The value is whatever
// the quotes hold, so it is redacted whatever it looks like, as structuredContent's value
// under the same key is; the text mirror of a redacted structuredContent then stays a mirror.
// Three quotings: `"key":"v"`, `'key': 'v'`, and `\"key\":\"v\"` (JSON text inside JSON
// text), whose value runs to the next unescaped `\"`. These alternatives come first: they
// start at the key's quote, left of anything the value holds, so they win the leftmost match.
//
// A bare AWS secret access key (40 base64 characters) is only recognised beside a hint: its
// label (`aws_secret_access_key`, `SecretAccessKey`, `secret_access_key`) or right after an
// access key id, separated by a few non-base64 characters (` / `, `,`, `", "`). Without a
// hint, 40 mixed-case base64 characters are also the last line of a wrapped certificate or
// MIME body, or 30 random bytes of any id; redacting those destroys data (see the look-alikes
// in tests/redaction.rs).
const PATTERN: &str = concat!(
    r#"(?P<kvk>"(?:"#,
    secret_keys!(),
    r#")"[ \t\r\n]*:[ \t\r\n]*")(?P<kvv>(?:[^"\\\n]|\\.)*)"#,
    r"|(?P<kvks>'(?:",
    secret_keys!(),
    r")'[ \t]*:[ \t]*')(?P<kvvs>(?:[^'\\\n]|\\.)*)",
    r#"|(?P<kvke>\\"(?:"#,
    secret_keys!(),
    r#")\\"(?:[ \t]|\\[nrt])*:(?:[ \t]|\\[nrt])*\\")(?P<kvve>(?:[^"\\]|\\\\(?:\\["\\]|[^"\\]))*)"#,
    r"|(?P<pem>-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.)*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z))",
    r"|(?P<url>(?-u:\b)[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@?#\x22']+:)(?P<urlpw>[^\s@/?#\x22']+)@",
    r"|(?P<jwt>eyJ[A-Za-z0-9_\-]{4,}\.eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{8,})",
    r"|(?P<aws>(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}(?-u:\b))(?:(?P<awsgap>(?:[^A-Za-z0-9+=\\]|\\[nrt\x22]){1,12})(?P<awspair>[A-Za-z0-9/+]{40})(?-u:\b))?",
    r"|(?P<awsskey>(?i:(?:aws_?)?secret_?access_?key)[\x22']?[ \t]*[:=][ \t]*[\x22']?)(?P<awss>[A-Za-z0-9/+=]{40})(?-u:\b)",
    r"|(?P<gh>(?:(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{50,})(?-u:\b))",
    r"|(?P<slackwh>https://hooks\.slack\.com/services/[A-Za-z0-9/]{16,})",
    r"|(?P<slack>xox[abposr]-[A-Za-z0-9\-]{10,})",
    r"|(?:(?-u:\b)|\\[nrt])(?P<openai>sk-(?:proj-|svcacct-|admin-|ant-)?[A-Za-z0-9_\-]{20,})",
    r"|(?P<bearerkw>(?-u:\b)(?i:bearer)[ \t]+)(?P<bearer>[A-Za-z0-9._~+/\-]{16,}=*)",
    r"|(?P<email>(?-u:\b)[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}(?-u:\b))",
    r"|(?:\A|[^0-9])(?P<card>[0-9](?:[ \-]?[0-9]){12,18}(?-u:\b))",
);

/// Credentials as their issuers form them, from the forms public secret-scanning rule sets
/// document: each alternative a literal prefix, then a body of a fixed alphabet and length.
/// Every alternative starts with a literal, so the regex engine finds candidates by searching
/// for the prefixes and reads no other byte; a match counts only where it stands as a word of
/// its own (see [`redact_issued`]), so `task_live_…` is not Stripe's `sk_live_…`.
const ISSUED: &str = concat!(
    // Stripe secret and restricted keys.
    r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,99}",
    // Google API keys.
    r"|AIza[0-9A-Za-z_\-]{35}",
    // GitLab personal, project and group access tokens; runner and deploy tokens.
    r"|gl(?:pat|dt|rt|ptt)-[0-9A-Za-z_\-]{20,64}",
    // npm access tokens.
    r"|npm_[A-Za-z0-9]{36}",
    // PyPI API tokens (a macaroon whose first bytes name pypi.org).
    r"|pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}",
    // Hugging Face user access tokens.
    r"|hf_[A-Za-z]{34}",
    // Shopify access tokens and shared secrets.
    r"|shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}",
    // SendGrid API keys.
    r"|SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}",
    // Mailgun API keys.
    r"|key-[0-9a-zA-Z]{32}",
    // DigitalOcean personal, OAuth and refresh tokens.
    r"|do[por]_v1_[a-f0-9]{64}",
    // HashiCorp Vault service and batch tokens.
    r"|hv[sb]\.[A-Za-z0-9_\-]{24,}",
    // Grafana Cloud API tokens and service account tokens.
    r"|glc_[A-Za-z0-9+/]{32,400}={0,2}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}",
    // Linear API keys.
    r"|lin_api_[A-Za-z0-9]{40}",
    // Postman API keys.
    r"|PMAK-[a-f0-9]{24}-[a-f0-9]{34}",
    // Doppler tokens.
    r"|dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}",
    // Atlassian API tokens.
    r"|ATATT3[A-Za-z0-9_\-=]{180,}",
    // age secret keys.
    r"|AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
    // Pulumi access tokens.
    r"|pul-[a-f0-9]{40}",
    // Databricks personal access tokens.
    r"|dapi[a-f0-9]{32}(?:-[0-9])?",
    // Square access tokens and OAuth secrets.
    r"|sq0(?:atp|csp)-[0-9A-Za-z_\-]{22,43}",
    // New Relic user API keys.
    r"|NRAK-[A-Z0-9]{27}",
    // Sentry organization and user auth tokens.
    r"|sntry[su]_[A-Za-z0-9+/=_\-]{40,}",
    // Supabase access tokens.
    r"|sbp_[a-f0-9]{40}",
    // PlanetScale tokens and passwords.
    r"|pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_\-=.]{32,64}",
    // Figma personal access tokens.
    r"|figd_[A-Za-z0-9_\-]{40,}",
    // Fly.io tokens.
    r"|fo1_[A-Za-z0-9_\-]{43}",
    // Notion integration tokens.
    r"|ntn_[0-9]{11}[A-Za-z0-9]{35}",
    // Slack app-level tokens (bot and user tokens are the first pattern's `xox`).
    r"|xapp-[0-9]-[A-Z0-9]+-[0-9]+-[a-f0-9]{64}",
    // Alibaba Cloud and Tencent Cloud access key ids.
    r"|LTAI[A-Za-z0-9]{20}|AKID[A-Za-z0-9]{32}",
    // Airtable personal access tokens.
    r"|pat[A-Za-z0-9]{14}\.[a-f0-9]{64}",
    // Contentful personal access tokens.
    r"|CFPAT-[A-Za-z0-9_\-]{43}",
    // Shippo API tokens.
    r"|shippo_(?:live|test)_[a-f0-9]{40}",
    // Azure storage account keys, in a connection string.
    r"|AccountKey=[A-Za-z0-9+/]{86}==",
    // Telegram bot tokens, in the API URL that carries them.
    r"|/bot[0-9]{8,10}:AA[0-9A-Za-z_\-]{33}",
);

fn issued() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(ISSUED).expect("the issued-credential pattern is a valid regex"))
}

/// The issued credentials in `s` replaced by a marker, or `None` when there is none. A match
/// stands as a word of its own or not at all: a letter, digit or `_` right before it (other
/// than the `n`, `r` or `t` of a JSON escape), or right after it, makes it part of a longer
/// word.
fn redact_issued(s: &str, tally: &mut Tally) -> Option<String> {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let bytes = s.as_bytes();
    let mut out: Option<String> = None;
    let mut last = 0;
    for m in issued().find_iter(s) {
        let (mut start, end) = (m.start(), m.end());
        let escaped = start >= 2
            && bytes[start - 2] == b'\\'
            && matches!(bytes[start - 1], b'n' | b'r' | b't');
        let glued_before = start > 0 && word(bytes[start - 1]) && word(bytes[start]) && !escaped;
        let glued_after = end < bytes.len() && word(bytes[end]);
        if glued_before || glued_after {
            continue;
        }
        // What names where the credential goes is kept; the credential is not.
        for kept in ["AccountKey=", "/bot"] {
            if m.as_str().starts_with(kept) {
                start += kept.len();
            }
        }
        tally.add(RedactionKind::ApiToken);
        let buf = out.get_or_insert_with(|| String::with_capacity(s.len()));
        buf.push_str(&s[last..start]);
        buf.push_str(&RedactionKind::ApiToken.marker());
        last = end;
    }
    let mut buf = out?;
    buf.push_str(&s[last..]);
    Some(buf)
}

fn regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        regex::RegexBuilder::new(PATTERN)
            .dfa_size_limit(16 << 20)
            .build()
            .expect("redaction pattern is a valid regex")
    })
}

/// The fewest bytes a match of the pattern without an `@` has: a secret-named key with a
/// one-byte value, `"pwd":"x`, whose closing quote the pattern does not need (the value of a
/// cut-off pair is still a secret). The tests hold this to strings generated from the pattern.
pub(crate) const SHORTEST_MATCH_WITHOUT_AT: usize = 8;

/// Returns the redacted text, or `None` when nothing matched (the common case, no copy).
/// `in_identifier` suppresses only card-number matching: a 16-digit id that happens to
/// pass Luhn must survive, or the next call that needs it fails.
pub fn redact_str(s: &str, in_identifier: bool, tally: &mut Tally) -> Option<String> {
    let structural = redact_structural(s, in_identifier, tally);
    match redact_issued(structural.as_deref().unwrap_or(s), tally) {
        Some(both) => Some(both),
        None => structural,
    }
}

/// The forms of the one combined pattern, [`PATTERN`].
fn redact_structural(s: &str, in_identifier: bool, tally: &mut Tally) -> Option<String> {
    // Most short values (codes, enums, ids) need not even be classified: see
    // SHORTEST_MATCH_WITHOUT_AT.
    if s.len() < SHORTEST_MATCH_WITHOUT_AT && !s.contains('@') {
        return None;
    }
    if !may_match(s) {
        return None;
    }
    let re = regex();
    // The DFA-only check is several times cheaper than a capture search; nearly all strings
    // stop here.
    if !re.is_match(s) {
        return None;
    }
    let mut out: Option<String> = None;
    let mut last = 0usize;
    for caps in re.captures_iter(s) {
        let Some((start, end, replacement)) = classify(s, &caps, in_identifier, tally) else {
            continue;
        };
        let buf = out.get_or_insert_with(|| String::with_capacity(s.len()));
        buf.push_str(&s[last..start]);
        buf.push_str(&replacement);
        last = end;
    }
    let mut buf = out?;
    buf.push_str(&s[last..]);
    Some(buf)
}

/// What one match replaces: `(start, end, replacement)`, with what it redacted added to
/// `tally`; `None` when the match is a look-alike after all.
fn classify(
    s: &str,
    c: &Captures<'_>,
    in_identifier: bool,
    tally: &mut Tally,
) -> Option<(usize, usize, String)> {
    use RedactionKind as K;
    let mut whole = |m: regex::Match<'_>, k: K| {
        tally.add(k);
        Some((m.start(), m.end(), k.marker()))
    };
    // A secret-named key's quoted value: all of it, unless it is empty or already a marker
    // (so redaction stays idempotent).
    if let Some(v) = c
        .name("kvv")
        .or_else(|| c.name("kvvs"))
        .or_else(|| c.name("kvve"))
    {
        let value = v.as_str();
        return if value.is_empty() || value.starts_with("[REDACTED:") {
            None
        } else {
            whole(v, K::SecretField)
        };
    }
    if let Some(id) = c.name("aws") {
        let mut out = K::AwsAccessKey.marker();
        tally.add(K::AwsAccessKey);
        let mut end = id.end();
        if let (Some(gap), Some(key)) = (c.name("awsgap"), c.name("awspair")) {
            end = key.end();
            if is_aws_secret_key(key.as_str(), &s[key.end()..]) {
                out.push_str(gap.as_str());
                out.push_str(&K::AwsSecretKey.marker());
                tally.add(K::AwsSecretKey);
            } else {
                // Not a key after all: what the match swallowed still gets every other rule.
                let rest = &s[id.end()..key.end()];
                out.push_str(
                    &redact_str(rest, in_identifier, tally).unwrap_or_else(|| rest.into()),
                );
            }
        }
        return Some((id.start(), end, out));
    }
    if let Some(m) = c.name("pem") {
        return whole(m, K::PemPrivateKey);
    }
    if let (Some(_), Some(pw)) = (c.name("url"), c.name("urlpw")) {
        tally.add(K::UrlPassword);
        return Some((pw.start(), pw.end(), K::UrlPassword.marker()));
    }
    if let Some(m) = c.name("jwt") {
        return whole(m, K::Jwt);
    }
    if let Some(m) = c.name("awss") {
        return whole(m, K::AwsSecretKey);
    }
    if let Some(m) = c.name("gh") {
        return whole(m, K::GithubToken);
    }
    if let Some(m) = c.name("slackwh") {
        return whole(m, K::SlackWebhook);
    }
    if let Some(m) = c.name("slack") {
        return whole(m, K::SlackToken);
    }
    if let Some(m) = c.name("openai") {
        // Random keys mix letters and digits; prose like "sk-learn-compatible-..." does not.
        let body = m.as_str();
        let has_digit = body.bytes().any(|b| b.is_ascii_digit());
        let has_upper = body.bytes().any(|b| b.is_ascii_uppercase());
        return if has_digit && has_upper {
            whole(m, K::OpenaiKey)
        } else {
            None
        };
    }
    if let Some(tok) = c.name("bearer") {
        let t = tok.as_str();
        return if t.bytes().any(|b| b.is_ascii_digit()) {
            tally.add(K::BearerToken);
            Some((tok.start(), tok.end(), K::BearerToken.marker()))
        } else {
            None
        };
    }
    if let Some(m) = c.name("email") {
        return if plausible_email(m.as_str()) {
            whole(m, K::Email)
        } else {
            None
        };
    }
    if let Some(m) = c.name("card") {
        return if !in_identifier && is_card_number(m.as_str()) {
            whole(m, K::CardNumber)
        } else {
            None
        };
    }
    None
}

/// The 40 characters after an access key id are its secret key when they end the base64 run
/// (not the first 40 of a longer one) and mix upper and lower case, as 30 random bytes in
/// base64 do; a hex digest (a commit hash) of the same length has one case only.
fn is_aws_secret_key(key: &str, after: &str) -> bool {
    let longer = after.starts_with(['/', '+', '=']);
    let upper = key.bytes().any(|b| b.is_ascii_uppercase());
    let lower = key.bytes().any(|b| b.is_ascii_lowercase());
    !longer && upper && lower
}

fn plausible_email(s: &str) -> bool {
    let Some((local, domain)) = s.rsplit_once('@') else {
        return false;
    };
    if local.starts_with('.') || local.ends_with('.') {
        return false;
    }
    // `icon@2x.png` and friends: asset names, not addresses.
    let tld = domain.rsplit('.').next().unwrap_or("").to_ascii_lowercase();
    !matches!(
        tld.as_str(),
        "png" | "jpg" | "jpeg" | "gif" | "svg" | "webp" | "css" | "js" | "json" | "txt" | "pdf"
    )
}

/// Luhn plus a known issuer prefix: order numbers and timestamps of the same length pass
/// Luhn one time in ten, and redacting them would destroy data for no gain.
pub fn is_card_number(s: &str) -> bool {
    let digits: Vec<u8> = s
        .bytes()
        .filter(u8::is_ascii_digit)
        .map(|b| b - b'0')
        .collect();
    let n = digits.len();
    if !(13..=19).contains(&n) {
        return false;
    }
    if digits.iter().all(|d| *d == digits[0]) {
        return false;
    }
    let prefix = |k: usize| digits[..k].iter().fold(0u32, |a, d| a * 10 + u32::from(*d));
    let issuer = match digits[0] {
        4 => true,                                             // Visa
        5 => (51..=55).contains(&prefix(2)),                   // Mastercard
        2 => (2221..=2720).contains(&prefix(4)),               // Mastercard 2-series
        3 => matches!(prefix(2), 34 | 37 | 35 | 36 | 38 | 30), // Amex, JCB, Diners
        6 => {
            prefix(4) == 6011
                || prefix(2) == 65
                || (644..=649).contains(&prefix(3))
                || prefix(2) == 62
        }
        _ => false,
    };
    issuer && luhn(&digits)
}

fn luhn(digits: &[u8]) -> bool {
    let mut sum = 0u32;
    for (i, d) in digits.iter().rev().enumerate() {
        let mut d = u32::from(*d);
        if i % 2 == 1 {
            d *= 2;
            if d > 9 {
                d -= 9;
            }
        }
        sum += d;
    }
    sum.is_multiple_of(10)
}

/// Redacts every string, numeric card number, secret-named field and object key in `v`,
/// in place. Iterative so that depth cannot exhaust the stack.
pub fn redact_value(v: &mut Value, tally: &mut Tally) {
    redact_value_within(v, usize::MAX, tally);
}

/// As [`redact_value`], but gives up (returning `false`) on finding an array or object
/// nested `max_depth` levels or deeper, which is what [`crate::jsonsize::deeper_than`]
/// refuses. The normalizer refuses such values anyway; checking here saves it a separate
/// walk over every result. When it gives up, `v` is partly redacted and `tally` is partial.
pub(crate) fn redact_value_within(v: &mut Value, max_depth: usize, tally: &mut Tally) -> bool {
    // Room for a small result's pending members from the start: growing from one slot cost
    // three reallocations on a 1 KB result.
    let mut stack: Vec<(&mut Value, Field, usize)> = Vec::with_capacity(32);
    stack.push((v, Field::default(), 0));
    while let Some((v, f, depth)) = stack.pop() {
        if matches!(v, Value::Array(_) | Value::Object(_)) && depth >= max_depth {
            return false;
        }
        match v {
            Value::String(s) => {
                if let Some(r) = redact_string(s, f, tally) {
                    *s = r;
                }
            }
            Value::Number(n) => {
                if !f.identifier
                    && let Some(u) = n.as_u64()
                    && u >= CARD_NUMBER_MIN
                    && is_card_number(&u.to_string())
                {
                    tally.add(RedactionKind::CardNumber);
                    *v = Value::String(RedactionKind::CardNumber.marker());
                } else if f.secret {
                    tally.add(RedactionKind::SecretField);
                    *v = Value::String(RedactionKind::SecretField.marker());
                }
            }
            Value::Array(a) => {
                for x in a.iter_mut() {
                    stack.push((x, f, depth + 1));
                }
            }
            Value::Object(m) => {
                redact_keys(m, tally);
                for (k, x) in m.iter_mut() {
                    stack.push((x, Field::of(k), depth + 1));
                }
            }
            Value::Bool(_) | Value::Null => {}
        }
    }
    true
}

#[derive(Debug, Default, Clone, Copy)]
struct Field {
    identifier: bool,
    secret: bool,
}

impl Field {
    fn of(key: &str) -> Field {
        Field {
            identifier: is_identifier(key),
            secret: is_secret_field(key),
        }
    }
}

/// The smallest integer [`redact_value`] checks as a card number (13 digits). A record with
/// a smaller one cannot have it turned into a marker.
pub const CARD_NUMBER_MIN: u64 = 1_000_000_000_000;

/// What [`redact_value`] writes over the string `s` found under `key` (`None`: it stays). For
/// records whose fields are known (audit and log lines), so they are redacted alike without
/// first being built as a JSON tree, which cost more than the redaction on a small call.
pub fn redact_field_str(key: &str, s: &str, tally: &mut Tally) -> Option<String> {
    redact_string(s, Field::of(key), tally)
}

/// A secret-named field's text is replaced whole; an identifier's is spared card matching.
fn redact_string(s: &str, f: Field, tally: &mut Tally) -> Option<String> {
    if f.secret && !s.is_empty() && !s.starts_with("[REDACTED:") {
        tally.add(RedactionKind::SecretField);
        Some(RedactionKind::SecretField.marker())
    } else {
        redact_str(s, f.identifier, tally)
    }
}

/// Maps keyed by e-mail address or token leak just as well as values do. Keys are only
/// rewritten when they hold a secret; collisions get a numeric suffix so no entry is lost.
fn redact_keys(m: &mut Map<String, Value>, tally: &mut Tally) {
    let mut probe = Tally::default();
    if !m.keys().any(|k| redact_str(k, false, &mut probe).is_some()) {
        return;
    }
    let old = std::mem::take(m);
    for (k, x) in old {
        let mut key = redact_str(&k, false, tally).unwrap_or(k);
        if m.contains_key(&key) {
            let mut i = 2;
            while m.contains_key(&format!("{key}#{i}")) {
                i += 1;
            }
            key = format!("{key}#{i}");
        }
        m.insert(key, x);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn luhn_examples() {
        assert!(is_card_number("4111111111111111"));
        assert!(is_card_number("4111 1111 1111 1111"));
        assert!(is_card_number("5500-0000-0000-0004"));
        assert!(is_card_number("378282246310005"));
        assert!(!is_card_number("4111111111111112"));
        assert!(!is_card_number("1234567812345670")); // Luhn-valid, no issuer
    }
}
