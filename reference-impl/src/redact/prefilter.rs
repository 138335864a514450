//! Which strings cannot hold anything the redaction pattern matches, found several times
//! faster than the pattern's own scan.
//!
//! The pattern's alternatives start with letters, digits and quotes, so the regex engine has
//! no literal to skip ahead by and its lazy DFA visits every byte, most of the normalizer's
//! time on a large text (reports/benchmarks.md has the figures). But every alternative needs a byte that is
//! rare in most text, its *trigger*, with a few known bytes around it; and a card number
//! needs a run of 13 digits. A block of 64 bytes is classified at once (with SSE2 or AVX2 on
//! x86_64), and only the triggers in it are looked at, each against the bytes the
//! alternative needs beside it. Some are not even looked at: a `:` after a digit (a time of
//! day), a `-` or `.` between two digits (a date, a decimal), a `b` not before an `e`. A
//! string with no trigger that passes and no such digit run cannot match and is not scanned;
//! any other string is scanned whole by the pattern as before, so what is redacted never
//! changes, only how soon a clean string is passed.
//!
//! | alternative | trigger | what must be beside it |
//! |---|---|---|
//! | URL with a password, e-mail | `@` | (nothing checked) |
//! | secret-named key and value, three quotings | `"` `'` | a secret key name after it |
//! | labelled AWS secret key | `:` `=` | `key`, then an optional quote and blanks, before it |
//! | PEM private key | `-` | `----BEGIN` after it |
//! | OpenAI-style key, Slack token | `-` | `sk`, or `xox` and one of `abposr`, before it |
//! | GitHub token | `_` | `ghp` `gho` `ghu` `ghs` `ghr` or `github` before it |
//! | JWT, Slack webhook | `.` | `eyJ` after it, or `hooks` before it |
//! | AWS access key id | `A` | `KIA` `SIA` `BIA` `CCA` after it |
//! | bearer token | `b` `B` | `earer`, any ASCII case, after it |
//! | card number | digits | 13 digits, each pair apart by at most one space or `-` |
//!
//! Key names and `key` are matched by the pattern under Unicode case folding, where `ſ`
//! (U+017F) is an `s` and `K` (Kelvin, U+212A) a `k`; the checks read those as the letters
//! they fold to. The tests hold all of this to the pattern itself.

/// A secret key name as the pattern's `secret_keys!` reads it, case folded and without the
/// `_` or `-` it allows between words. Checked as a prefix: more strings pass than match,
/// never fewer.
const KEY_NAMES: &[&[u8]] = &[
    b"password",
    b"passwd",
    b"pwd",
    b"clientsecret",
    b"apisecret",
    b"secret",
    b"xapikey",
    b"apikey",
    b"accesstoken",
    b"refreshtoken",
    b"authtoken",
    b"sessiontoken",
    b"privatekey",
    b"authorization",
];

/// The longest of [`KEY_NAMES`]; a key is read no further.
const KEY_NAME_MAX: usize = 13;

/// The fewest digits the card alternative matches: a first digit and at least 12 more.
const CARD_DIGITS: u32 = 13;

/// Bytes classified at once: one bit of a `u64` mask per byte.
const BLOCK: usize = 64;

/// `false` only when the redaction pattern has no match anywhere in `s`.
pub(super) fn may_match(s: &str) -> bool {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    {
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("popcnt") {
            // SAFETY: both features were just detected.
            return unsafe { simd::may_match_avx2(s.as_bytes()) };
        }
    }
    scan(s.as_bytes(), Masks::of)
}

/// The scan over blocks, inlined into each caller so that the whole of it is compiled for
/// the caller's instruction set (a popcount is one instruction with `popcnt`, a dozen
/// without).
#[inline(always)]
fn scan(b: &[u8], masks: impl Fn(&[u8; BLOCK]) -> Masks) -> bool {
    let mut cards = DigitRuns::default();
    let mut digit_last = false;
    let mut at = 0;
    while at < b.len() {
        let end = (at + BLOCK).min(b.len());
        let m = block_masks(&b[at..end], &masks);
        let next = Neighbours::of(&m, digit_last, b.get(end).copied());
        digit_last = (m.digits >> m.top()) & 1 == 1;
        if cards.push(&m, &next) {
            return true;
        }
        let mut t = m.triggers_to_check(&next);
        while t != 0 {
            let i = at + t.trailing_zeros() as usize;
            if trigger_passes(b, i) {
                return true;
            }
            t &= t - 1;
        }
        at = end;
    }
    false
}

/// The masks of a block of up to 64 bytes. A shorter one (the last) is padded with zero
/// bytes, which are in no class, so a short string is classified as fast as a long one.
#[inline(always)]
fn block_masks(chunk: &[u8], masks: impl Fn(&[u8; BLOCK]) -> Masks) -> Masks {
    match chunk.try_into() {
        Ok(block) => masks(block),
        Err(_) => {
            let mut block = [0u8; BLOCK];
            block[..chunk.len()].copy_from_slice(chunk);
            Masks {
                len: chunk.len() as u32,
                ..masks(&block)
            }
        }
    }
}

/// Whether the trigger byte at `i` has beside it what its alternative needs.
fn trigger_passes(b: &[u8], i: usize) -> bool {
    let before = &b[..i];
    let after = &b[i + 1..];
    match b[i] {
        b'@' => true,
        b'"' | b'\'' => key_name_starts(after),
        b':' | b'=' => key_ends(before),
        b'-' => {
            after.starts_with(b"----BEGIN")
                || before.ends_with(b"sk")
                || (before.len() >= 4
                    && before[before.len() - 4..before.len() - 1] == *b"xox"
                    && b"abposr".contains(&before[before.len() - 1]))
        }
        b'_' => {
            [b"ghp", b"gho", b"ghu", b"ghs", b"ghr"]
                .iter()
                .any(|p| before.ends_with(*p))
                || before.ends_with(b"github")
        }
        b'.' => after.starts_with(b"eyJ") || before.ends_with(b"hooks"),
        b'A' => [b"KIA", b"SIA", b"BIA", b"CCA"]
            .iter()
            .any(|p| after.starts_with(*p)),
        b'b' | b'B' => after.len() >= 5 && after[..5].eq_ignore_ascii_case(b"earer"),
        // Only trigger bytes are marked; were another one, the regex scanning the string is
        // the safe answer.
        _ => {
            debug_assert!(false, "{} is not a trigger", b[i]);
            true
        }
    }
}

/// Whether `s` starts with a secret key name, case folded, `_` and `-` skipped.
fn key_name_starts(s: &[u8]) -> bool {
    // Every name starts with one of these (`ſ` is the first byte of an `s`): most quotes
    // are over here.
    if !s.first().is_some_and(|c| b"pcasxrPCASXR\xC5".contains(c)) {
        return false;
    }
    let mut folded = [0u8; KEY_NAME_MAX];
    let mut n = 0;
    let mut i = 0;
    while n < KEY_NAME_MAX && i < s.len() {
        let (letter, width) = match s[i] {
            b'_' | b'-' => (None, 1),
            c if c.is_ascii_alphabetic() => (Some(c.to_ascii_lowercase()), 1),
            0xC5 if s.get(i + 1) == Some(&0xBF) => (Some(b's'), 2),
            0xE2 if s.get(i + 1..i + 3) == Some(&[0x84, 0xAA]) => (Some(b'k'), 3),
            _ => break,
        };
        if let Some(l) = letter {
            folded[n] = l;
            n += 1;
        }
        i += width;
    }
    let folded = &folded[..n];
    KEY_NAMES.iter().any(|k| folded.starts_with(k))
}

/// Whether `s` ends with `key` (any case, `k` possibly the Kelvin sign) followed by an
/// optional quote and blanks: what the labelled AWS secret key has before its `:` or `=`.
fn key_ends(s: &[u8]) -> bool {
    let mut end = s.len();
    while end > 0 && matches!(s[end - 1], b' ' | b'\t') {
        end -= 1;
    }
    if end > 0 && matches!(s[end - 1], b'"' | b'\'') {
        end -= 1;
    }
    let s = &s[..end];
    if s.len() < 3 || !s[s.len() - 2..].eq_ignore_ascii_case(b"ey") {
        return false;
    }
    let s = &s[..s.len() - 2];
    s.last().is_some_and(|c| c.eq_ignore_ascii_case(&b'k')) || s.ends_with("\u{212A}".as_bytes())
}

/// Bit `i` of each mask says what byte `i` of a block of up to 64 is.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Masks {
    digits: u64,
    /// A space or `-`: what may stand between two digits of a card number.
    separators: u64,
    /// Triggers always checked: `@`, the quotes, `_`, `A`.
    triggers: u64,
    /// `:` and `=`: the check needs a letter or blank before them, so one after a digit (a
    /// time of day) is not checked.
    after_letter: u64,
    /// `-` and `.`: not checked between two digits (a date, a decimal), where neither the
    /// PEM header, the key prefixes, the JWT nor the webhook can have one.
    not_between_digits: u64,
    /// `b` and `B`: only checked before an `e` or `E`.
    bees: u64,
    /// `e` and `E`.
    ees: u64,
    /// The block's length in bytes: the last block is padded, and its last real byte is
    /// where the runs and neighbours end.
    len: u32,
}

/// Bit `i` says what stands beside byte `i`, the block's edges included.
struct Neighbours {
    digit_left: u64,
    digit_right: u64,
    /// Whether byte `i + 1` may be an `e` (at the block's end it is not known, so yes).
    e_right: u64,
}

impl Neighbours {
    fn of(m: &Masks, digit_last: bool, after: Option<u8>) -> Neighbours {
        let top = m.top();
        Neighbours {
            digit_left: (m.digits << 1) | u64::from(digit_last),
            digit_right: (m.digits >> 1)
                | (u64::from(after.is_some_and(|c| c.is_ascii_digit())) << top),
            e_right: (m.ees >> 1) | (1 << top),
        }
    }
}

impl Masks {
    /// A block's masks with what every x86_64 has (SSE2), or bytewise elsewhere.
    fn of(block: &[u8; BLOCK]) -> Masks {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        {
            simd::masks_sse2(block)
        }
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
        Masks::scalar(block)
    }

    /// Bytewise: what the vector versions are held to, and the masks elsewhere.
    #[cfg(any(test, not(all(target_arch = "x86_64", target_feature = "sse2"))))]
    fn scalar(block: &[u8]) -> Masks {
        let mut m = Masks {
            len: block.len() as u32,
            ..Masks::default()
        };
        for (i, &c) in block.iter().enumerate() {
            let bit = |yes: bool| u64::from(yes) << i;
            m.digits |= bit(c.is_ascii_digit());
            m.separators |= bit(c == b' ' || c == b'-');
            m.triggers |= bit(ALWAYS_CHECKED.contains(&c));
            m.after_letter |= bit(c == b':' || c == b'=');
            m.not_between_digits |= bit(c == b'-' || c == b'.');
            m.bees |= bit(c == b'b' || c == b'B');
            m.ees |= bit(c == b'e' || c == b'E');
        }
        m
    }

    /// These masks for the bytes before, `next`'s for the bytes after: lanes of 16 or 32
    /// bytes make a block.
    #[inline(always)]
    fn joined(self, next: Masks) -> Masks {
        let at = self.len;
        Masks {
            digits: self.digits | next.digits << at,
            separators: self.separators | next.separators << at,
            triggers: self.triggers | next.triggers << at,
            after_letter: self.after_letter | next.after_letter << at,
            not_between_digits: self.not_between_digits | next.not_between_digits << at,
            bees: self.bees | next.bees << at,
            ees: self.ees | next.ees << at,
            len: self.len + next.len,
        }
    }

    fn top(&self) -> u32 {
        self.len - 1
    }

    /// The triggers worth a look, given what stands beside them.
    fn triggers_to_check(&self, n: &Neighbours) -> u64 {
        self.triggers
            | (self.after_letter & !n.digit_left)
            | (self.not_between_digits & !(n.digit_left & n.digit_right))
            | (self.bees & n.e_right)
    }
}

const ALWAYS_CHECKED: [u8; 5] = [b'@', b'"', b'\'', b'_', b'A'];

/// The same masks 16 bytes (SSE2) or 32 bytes (AVX2) at a time: about 40 vector operations
/// a lane, where the bytewise loop takes as many per byte.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod simd {
    use std::arch::x86_64::*;

    use super::{ALWAYS_CHECKED, BLOCK, Masks};

    /// Each mask through [`crate::opaque::opaque`], so the optimizer does not rebuild the
    /// scan's bit operations in vector registers.
    #[inline(always)]
    fn opaque_masks(m: Masks) -> Masks {
        use crate::opaque::opaque;
        Masks {
            digits: opaque(m.digits),
            separators: opaque(m.separators),
            triggers: opaque(m.triggers),
            after_letter: opaque(m.after_letter),
            not_between_digits: opaque(m.not_between_digits),
            bees: opaque(m.bees),
            ees: opaque(m.ees),
            len: m.len,
        }
    }

    /// SSE2 is part of every x86_64 target, so this needs no check.
    pub(super) fn masks_sse2(block: &[u8; BLOCK]) -> Masks {
        let p = block.as_ptr();
        // SAFETY: the four 16-byte lanes are the block's 64 bytes; loadu needs no alignment.
        opaque_masks(unsafe {
            lane_sse2(p)
                .joined(lane_sse2(p.add(16)))
                .joined(lane_sse2(p.add(32)))
                .joined(lane_sse2(p.add(48)))
        })
    }

    /// One lane's masks from 16 (SSE2) or 32 (AVX2) bytes at `p`: the same operations, with
    /// each instruction set's names. Written with macros, not closures: a closure is not
    /// always inlined, and then every comparison became a call.
    macro_rules! lane {
        (
            $(#[$attr:meta])* $name:ident, $width:literal, $bits:ty,
            $load:ident, $eq:ident, $splat:ident, $or:ident, $and:ident,
            $max:ident, $min:ident, $zero:ident, $movemask:ident
        ) => {
            $(#[$attr])*
            unsafe fn $name(p: *const u8) -> Masks {
                macro_rules! is {
                    ($v:expr, $c:expr) => {
                        $eq($v, $splat($c as i8))
                    };
                }
                macro_rules! bits {
                    ($x:expr) => {
                        u64::from($movemask($x) as $bits)
                    };
                }
                // SAFETY: the caller hands `$width` readable bytes at `p`, and the instruction
                // set (SSE2 is in every x86_64 target; AVX2 is the attribute's).
                unsafe {
                    let v = $load(p.cast());
                    // Unsigned range check: v is in '0'..='9' when clamping it there changes
                    // nothing.
                    let digit = $and(
                        $eq($max(v, $splat(b'0' as i8)), v),
                        $eq($min(v, $splat(b'9' as i8)), v),
                    );
                    let dash = is!(v, b'-');
                    let mut always = $zero();
                    for c in ALWAYS_CHECKED {
                        always = $or(always, is!(v, c));
                    }
                    Masks {
                        digits: bits!(digit),
                        separators: bits!($or(is!(v, b' '), dash)),
                        triggers: bits!(always),
                        after_letter: bits!($or(is!(v, b':'), is!(v, b'='))),
                        not_between_digits: bits!($or(dash, is!(v, b'.'))),
                        bees: bits!($or(is!(v, b'b'), is!(v, b'B'))),
                        ees: bits!($or(is!(v, b'e'), is!(v, b'E'))),
                        len: $width,
                    }
                }
            }
        };
    }

    lane!(
        #[inline(always)]
        lane_sse2,
        16,
        u16,
        _mm_loadu_si128,
        _mm_cmpeq_epi8,
        _mm_set1_epi8,
        _mm_or_si128,
        _mm_and_si128,
        _mm_max_epu8,
        _mm_min_epu8,
        _mm_setzero_si128,
        _mm_movemask_epi8
    );

    lane!(
        #[inline]
        #[target_feature(enable = "avx2")]
        lane_avx2,
        32,
        u32,
        _mm256_loadu_si256,
        _mm256_cmpeq_epi8,
        _mm256_set1_epi8,
        _mm256_or_si256,
        _mm256_and_si256,
        _mm256_max_epu8,
        _mm256_min_epu8,
        _mm256_setzero_si256,
        _mm256_movemask_epi8
    );

    /// [`super::may_match`] with AVX2 and `popcnt`.
    ///
    /// # Safety
    /// Both must be there.
    #[target_feature(enable = "avx2,popcnt")]
    pub(super) unsafe fn may_match_avx2(b: &[u8]) -> bool {
        super::scan(b, |block| {
            // SAFETY: AVX2 is there (the caller's promise).
            unsafe { masks_avx2(block) }
        })
    }

    /// # Safety
    /// AVX2 must be there.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn masks_avx2(block: &[u8; BLOCK]) -> Masks {
        let p = block.as_ptr();
        // SAFETY: the two 32-byte lanes are the block's 64 bytes; loadu needs no alignment.
        opaque_masks(unsafe { lane_avx2(p).joined(lane_avx2(p.add(32))) })
    }
}

/// Follows runs of digits where one space or `-` may stand between two digits, across
/// blocks, and says when one reaches [`CARD_DIGITS`] digits, as the card alternative
/// `[0-9](?:[ \-]?[0-9]){12,18}` needs.
///
/// A separator belongs to a run only with a digit on each side; a run is then a stretch of
/// bytes each either a digit or such a separator, and the pattern can match a card in it
/// exactly when it holds 13 digits.
#[derive(Debug, Default)]
struct DigitRuns {
    /// Digits in the run still open at the end of the blocks seen so far.
    open: u32,
}

impl DigitRuns {
    /// Takes the next block; `true` as soon as a run holds a card's digits, so the scan
    /// can stop there.
    ///
    /// Counting a run's digits takes a popcount, which generic x86_64 code does in a dozen
    /// instructions, so it is done only for the few runs that could reach 13 digits: a run
    /// carried in from the block before, a run of 13 bytes or more, and the run carried out.
    fn push(&mut self, m: &Masks, n: &Neighbours) -> bool {
        let d = m.digits;
        let top = m.top();
        let runs = d | (m.separators & n.digit_left & n.digit_right);
        let carried = std::mem::take(&mut self.open);
        if runs == 0 {
            return false;
        }
        let head = (!runs).trailing_zeros();
        if carried > 0 && carried + (d & low_bits(head)).count_ones() >= CARD_DIGITS {
            return true;
        }
        if head == 64 {
            self.open = carried + d.count_ones();
            return self.open >= CARD_DIGITS;
        }
        if at_least_13(runs) != 0 && any_run_holds_a_card(runs, d) {
            return true;
        }
        if (runs >> top) & 1 == 1 {
            let tail = (!(runs << (63 - top))).leading_zeros();
            self.open = (d & (low_bits(tail) << (m.len - tail))).count_ones();
        }
        false
    }
}

fn any_run_holds_a_card(mut runs: u64, d: u64) -> bool {
    while runs != 0 {
        let start = runs.trailing_zeros();
        let bits = low_bits((!(runs >> start)).trailing_zeros()) << start;
        if (d & bits).count_ones() >= CARD_DIGITS {
            return true;
        }
        runs &= !bits;
    }
    false
}

/// The lowest `n` bits set, for `n` up to 64.
fn low_bits(n: u32) -> u64 {
    if n >= 64 { !0 } else { (1u64 << n) - 1 }
}

/// Bit `i` set when bits `i..i + 13` of `x` all are: a run shorter than 13 bytes cannot
/// hold 13 digits, so only blocks with a longer one need their runs counted.
fn at_least_13(x: u64) -> u64 {
    let x2 = x & (x >> 1);
    let x4 = x2 & (x2 >> 2);
    let x8 = x4 & (x4 >> 4);
    x8 & (x8 >> 5)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use regex::Regex;

    use super::*;
    use crate::redact::{PATTERN, SHORTEST_MATCH_WITHOUT_AT, regex};

    /// The pattern with its assertions taken out (the generator cannot honour them). What
    /// matches this is a superset of what matches the pattern, alternative by alternative,
    /// so what passes every one of these strings passes every real match.
    fn pattern_without_assertions() -> String {
        let p = PATTERN
            .replace(r"(?-u:\b)", "")
            .replace(r"(?:\A|[^0-9])", "")
            .replace(r"|\z)", ")");
        for assertion in [r"\b", r"\A", r"\z"] {
            assert!(!p.contains(assertion), "{assertion} left in {p}");
        }
        p
    }

    /// The card rule as the pattern states it, one byte at a time: the reference the block
    /// version is held to.
    fn card_run_bytewise(b: &[u8]) -> bool {
        let mut digits = 0;
        let mut after_separator = false;
        for &c in b {
            if c.is_ascii_digit() {
                digits += 1;
                if digits >= CARD_DIGITS {
                    return true;
                }
                after_separator = false;
            } else if (c == b' ' || c == b'-') && digits > 0 && !after_separator {
                after_separator = true;
            } else {
                digits = 0;
                after_separator = false;
            }
        }
        false
    }

    /// Every path the scan can take here: the masks of this CPU's best instruction set,
    /// SSE2's, and the bytewise ones.
    fn all_scans(s: &str) -> [bool; 3] {
        [
            may_match(s),
            scan(s.as_bytes(), Masks::of),
            scan(s.as_bytes(), |b| Masks::scalar(b)),
        ]
    }

    /// Pieces near the triggers: parts of what must stand beside them, the triggers, digits,
    /// separators, and the letters that fold to ASCII.
    const NEAR_TRIGGERS: &[&str] = &[
        "sk",
        "-",
        " ",
        "k",
        "K",
        "\u{17F}",
        "\u{212A}",
        "ey",
        "ec",
        "ret",
        "pass",
        "w",
        "\"",
        "'",
        ":",
        "=",
        "\\",
        "tok",
        "en",
        "api",
        "Key",
        "J",
        "AKI",
        "A",
        "K",
        "ghp",
        "github",
        "_",
        "xo",
        "xoxb",
        "x",
        "bear",
        "er",
        "b",
        "BEGIN",
        "-----",
        "PRIVATE KEY",
        "://",
        ".",
        "hooks",
        "slack",
        "\n",
        "\t",
        "@",
    ];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4000, .. ProptestConfig::default() })]

        /// Completeness: every string the pattern matches passes, wherever it sits in a
        /// block.
        #[test]
        fn every_match_passes(
            s in proptest::string::string_regex(&pattern_without_assertions()).unwrap(),
            pad in 0..70usize,
        ) {
            prop_assert!(may_match(&s), "{s:?}");
            let padded = format!("{}{s}", "~".repeat(pad));
            prop_assert!(may_match(&padded), "{padded:?}");
            // And redact_str's early exit lets it through.
            prop_assert!(s.len() >= SHORTEST_MATCH_WITHOUT_AT || s.contains('@'), "{s:?}");
        }

        /// The same from the other side: of strings made of pieces near the triggers, none
        /// that is passed over is matched by the pattern.
        #[test]
        fn what_is_passed_over_never_matches(parts in proptest::collection::vec(prop_oneof![
            proptest::sample::select(NEAR_TRIGGERS).prop_map(String::from),
            "[0-9]{1,7}",
            "[A-Za-z0-9]{1,12}",
        ], 0..60)) {
            let s: String = parts.concat();
            if !may_match(&s) {
                prop_assert!(!regex().is_match(&s), "{s:?}");
            }
        }

        /// The AVX2 build of the scan says what the portable one says.
        #[test]
        fn both_scans_agree(parts in proptest::collection::vec(prop_oneof![
            proptest::sample::select(NEAR_TRIGGERS).prop_map(String::from),
            "[0-9]{1,20}",
            "[A-Za-z0-9 ]{1,12}",
        ], 0..80)) {
            let s: String = parts.concat();
            let portable = scan(s.as_bytes(), Masks::of);
            prop_assert_eq!(may_match(&s), portable, "{:?}", s);
            let bytewise = scan(s.as_bytes(), |b| Masks::scalar(b));
            prop_assert_eq!(bytewise, portable, "{:?}", s);
        }

        #[test]
        fn card_runs_by_blocks_agree_with_the_bytewise_rule(
            s in prop_oneof!["[0-9 \\-x]{0,300}", "([0-9]{1,90}[ \\-x]{1,2}){0,5}"],
        ) {
            // Of these bytes only `-` is a trigger, and without `sk`, `xox` or `----BEGIN`
            // beside it it never passes: what is left is the digit runs.
            let bytewise = card_run_bytewise(s.as_bytes());
            prop_assert_eq!(all_scans(&s), [bytewise; 3], "{:?}", s);
        }

        #[test]
        fn vector_masks_agree_with_the_scalar_ones(bytes in proptest::collection::vec(any::<u8>(), BLOCK)) {
            let block: &[u8; BLOCK] = bytes.as_slice().try_into().expect("64 bytes");
            let scalar = Masks::scalar(block);
            prop_assert_eq!(Masks::of(block), scalar);
            #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
            {
                prop_assert_eq!(simd::masks_sse2(block), scalar);
                if std::is_x86_feature_detected!("avx2") {
                    // SAFETY: AVX2 was just detected.
                    prop_assert_eq!(unsafe { simd::masks_avx2(block) }, scalar);
                }
            }
        }

        /// A short block padded with zero bytes has the masks of its bytes alone.
        #[test]
        fn padding_adds_no_class(chunk in proptest::collection::vec(any::<u8>(), 0..BLOCK)) {
            prop_assert_eq!(block_masks(&chunk, Masks::of), Masks::scalar(&chunk));
        }
    }

    /// The only letters outside ASCII that Unicode case folding makes equal to an ASCII
    /// letter are the two the checks read as `s` and `k`.
    #[test]
    fn only_two_letters_fold_to_ascii() {
        let ascii_letter = Regex::new("(?i)^[a-z]$").expect("valid");
        let folding: Vec<char> = (0x80..=0x10FFFF)
            .filter_map(char::from_u32)
            .filter(|c| ascii_letter.is_match(c.encode_utf8(&mut [0; 4])))
            .collect();
        assert_eq!(folding, ['\u{17F}', '\u{212A}']);
        assert!(key_name_starts("\u{17F}ecret".as_bytes()));
        assert!(key_name_starts("api_\u{212A}ey".as_bytes()));
        assert!(key_ends("secret_access_\u{212A}ey\" ".as_bytes()));
    }

    #[test]
    fn key_names_are_read_far_enough() {
        assert_eq!(KEY_NAMES.iter().map(|k| k.len()).max(), Some(KEY_NAME_MAX));
    }

    /// One string per alternative (and per folding letter), at every offset in a block and
    /// across the next, after bytes of three kinds: whenever the pattern matches, every path
    /// passes the string.
    #[test]
    fn every_alternative_passes_at_every_offset() {
        let examples = [
            r#""password":"v""#.to_string(),
            "{'api_key': 'v'}".into(),
            r#"\"access-token\":\"v\""#.into(),
            "\"\u{17F}ecret\":\"v\"".into(),
            "\"api_\u{212A}ey\":\"v\"".into(),
            "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----".into(),
            "https://user:pw@example.com".into(),
            "eyJhbGciOi.eyJzdWIiOi.abcdefghij".into(),
            "AKIAABCDEFGHIJKLMNOP".into(),
            "aws_secret_access_key = abcdefghijABCDEFGHIJabcdefghijABCDEFGHIJ".into(),
            "SECRET_ACCESS_\u{212A}EY: abcdefghijABCDEFGHIJabcdefghijABCDEFGHIJ".into(),
            format!("ghp_{}", "a1B2".repeat(9)),
            format!("github_pat_{}", "a1B2_".repeat(10)),
            "https://hooks.slack.com/services/T0000/B0000/XXXXXXXX".into(),
            "xoxb-1234567890-abc".into(),
            "sk-proj-abcdefghijKLMNOPQRST1234".into(),
            "Bearer abcdefghijklmnop1234".into(),
            "john.doe@example.com".into(),
            "4111 1111 1111 1111".into(),
            "4111-1111-1111-1111".into(),
        ];
        for example in &examples {
            assert!(regex().is_match(example), "not a match: {example:?}");
            for pad in ["~", "0", "a", " "] {
                for n in 0..=2 * BLOCK + 2 {
                    let s = format!("{}{example}", pad.repeat(n));
                    if regex().is_match(&s) {
                        assert_eq!(all_scans(&s), [true; 3], "{s:?}");
                    }
                }
            }
        }
    }

    /// Every name the pattern's `secret_keys!` takes (its `_`/`-` optional, any case, the
    /// folding letters), in each quoting: a key name the prefilter's list lacks fails here,
    /// and a name here the pattern does not take fails too.
    #[test]
    fn every_secret_key_name_passes() {
        let templates = [
            "passwd",
            "password",
            "pwd",
            "secret",
            "client~secret",
            "api~secret",
            "x~api~key",
            "api~key",
            "access~token",
            "refresh~token",
            "auth~token",
            "session~token",
            "private~key",
            "secret~key",
            "secret~access~key",
            "authorization",
        ];
        let mut names: Vec<String> = Vec::new();
        for t in templates {
            let mut spelt = vec![String::new()];
            for part in t.split('~') {
                let mut longer = Vec::new();
                for p in &spelt {
                    if p.is_empty() {
                        longer.push(part.to_string());
                    } else {
                        for sep in ["", "_", "-"] {
                            longer.push(format!("{p}{sep}{part}"));
                        }
                    }
                }
                spelt = longer;
            }
            for n in spelt {
                names.push(n.to_uppercase());
                names.push(n.replace('s', "\u{17F}").replace('k', "\u{212A}"));
                names.push(n);
            }
        }
        for name in &names {
            for pair in [
                format!(r#""{name}":"v""#),
                format!("'{name}': 'v'"),
                format!(r#"\"{name}\":\"v\""#),
            ] {
                assert!(
                    regex().is_match(&pair),
                    "the pattern does not take {pair:?}"
                );
                assert_eq!(all_scans(&pair), [true; 3], "{pair:?}");
            }
        }
    }

    #[test]
    fn card_runs_follow_the_card_alternative() {
        for (s, run) in [
            ("4111111111111111", true),
            ("x 4111 1111 1111 1 y", true),
            ("5500-0000-0000-0", true),
            ("411111111111", false),
            // Two separators in a row, or a separator before the first digit, end the run.
            ("411111  1111111", false),
            ("411111 -1111111", false),
            ("2025-11-25 10:00:00 12345", false),
            ("- 1-2-3-4-5-6-7-8-9-0-1-2-3", true),
            (&"1".repeat(BLOCK), true),
            (&"1 ".repeat(BLOCK), true),
        ] {
            assert_eq!(card_run_bytewise(s.as_bytes()), run, "{s}");
            assert_eq!(all_scans(s), [run; 3], "{s}");
        }
        // Across a block boundary, with the separator as the block's last byte.
        let s = format!("{}411111 1111111", "~".repeat(BLOCK - 7));
        assert_eq!(s.as_bytes()[BLOCK - 1], b' ');
        assert_eq!(all_scans(&s), [true; 3]);
    }

    #[test]
    fn plain_log_text_is_passed_over() {
        let line = "2025-11-25T10:00:00Z INFO worker-3 processed job 5 in 23 ms\n";
        assert!(!may_match(&line.repeat(100)));
        assert!(may_match(&format!(
            "{}Bearer abcdefghijklmnop1",
            line.repeat(100)
        )));
    }
}
