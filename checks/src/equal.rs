//! Equality as MCP defines it: the one comparison every check that compares values uses.
//!
//! A gateway that re-serializes a result through a typed model writes `isError: false` where
//! the upstream wrote nothing, `0.0` where it wrote `0`, and members in its own order. Each is
//! the same value to every reader the spec describes, so none may fail a case; each is still
//! worth showing, so [`form_changes`] lists them for the report and the `relayed-verbatim`
//! check. What counts as "the same value" is data: the defaults come from
//! `specs/shapes/<shape>.yaml`, each with the spec text it rests on.
//!
//! The rules:
//! - a member the shape defaults (`isError` absent is `false`) reads as its default when absent;
//! - `_meta` keys that name the answering server belong to whoever answers, so they are left
//!   out of a relay comparison;
//! - numbers compare by exact value: `0` equals `0.0` and `1e2` equals `100`, while
//!   `9007199254740993` never equals `9007199254740992.0`, because an integer is never
//!   converted to a float to compare it;
//! - member order never matters; array order always does;
//! - `null` and absent stay different, and so do `{}` or `[]` and absent.
//!
//! One limit is the parser's, not the comparison's: an integer literal beyond the 64-bit range
//! is read as the nearest double on both sides, so two such literals that round to the same
//! double compare equal.

use relaycheck_model::Shape;
use relaycheck_model::catalogue::{Catalogue, ShapeSpec};
use serde_json::{Map, Number, Value};

/// What a shape says about the values of a result that the wire does not show.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Equivalence {
    /// Top-level result members and the value their absence means.
    pub defaults: Vec<(String, Value)>,
    /// `_meta` keys that describe the server answering, not the result.
    pub own_meta: Vec<String>,
    /// Array members whose order means nothing (SEP-3279's `outputs`).
    pub unordered: Vec<String>,
    /// The defaults of the catalogue's other shapes, for [`Equivalence::across`].
    pub other_defaults: Vec<(Shape, Vec<(String, Value)>)>,
    /// The answering-server `_meta` keys of the catalogue's other shapes, for
    /// [`Equivalence::across`].
    pub other_own_meta: Vec<(Shape, Vec<String>)>,
    /// Result members this shape's revision does not define (a later revision's).
    pub undefined: Vec<String>,
    /// Result members left out of a comparison: the members the client's revision does not
    /// define, once its answer crossed from a later revision ([`Equivalence::across`]).
    pub ignored: Vec<String>,
}

impl Equivalence {
    /// `result` as a reader of the shape sees it: defaulted members present, answering-server
    /// `_meta` keys gone (and `_meta` itself when only they were in it), unordered members in
    /// one order.
    pub fn canonical(&self, result: &Value) -> Value {
        let mut result = self.in_one_order(result);
        let Value::Object(fields) = &mut result else {
            return result;
        };
        for (member, value) in &self.defaults {
            fields
                .entry(member.clone())
                .or_insert_with(|| value.clone());
        }
        for member in &self.ignored {
            fields.shift_remove(member);
        }
        if let Some(Value::Object(meta)) = fields.get_mut("_meta") {
            let before = meta.len();
            meta.retain(|key, _| !self.own_meta.iter().any(|own| own == key));
            if meta.is_empty() && before > 0 {
                fields.shift_remove("_meta");
            }
        }
        result
    }

    /// `result` with the items of each unordered member sorted, so two results that list the
    /// same items in other orders read alike.
    fn in_one_order(&self, result: &Value) -> Value {
        let mut result = result.clone();
        if let Value::Object(fields) = &mut result {
            for member in &self.unordered {
                if let Some(Value::Array(items)) = fields.get_mut(member) {
                    items.sort_by_cached_key(sort_key);
                }
            }
        }
        result
    }

    /// The rules for a target that answered its client in this shape after its upstream
    /// answered it in `leg`, a revision of another protocol version (a gateway that bridges
    /// revisions). A member the leg's revision writes out by default is no member at all to a
    /// client of this one (2026-07-28's `resultType: "complete"` is how an older result reads
    /// there), so the leg's defaults are read too: a bridge that leaves such a member out
    /// changes the form, not the value. A value other than the default still counts.
    pub fn across(&self, leg: Shape) -> Equivalence {
        let mut rules = self.clone();
        let leg_defaults = self
            .other_defaults
            .iter()
            .filter(|(shape, _)| *shape == leg)
            .flat_map(|(_, defaults)| defaults);
        for (member, value) in leg_defaults {
            if !rules.defaults.iter().any(|(m, _)| m == member) {
                rules.defaults.push((member.clone(), value.clone()));
            }
        }
        // A key in which the leg's revision has a server describe itself describes the
        // upstream to the bridge, which is the server its own client talks to.
        let leg_own = self
            .other_own_meta
            .iter()
            .filter(|(shape, _)| *shape == leg)
            .flat_map(|(_, keys)| keys);
        for key in leg_own {
            if !rules.own_meta.contains(key) {
                rules.own_meta.push(key.clone());
            }
        }
        // What the client's revision does not define, a bridge from the leg's may leave out:
        // the text of the result carries it.
        rules.ignored = rules.undefined.clone();
        rules
    }

    /// Whether two results are the same value under this shape's rules.
    pub fn same_result(&self, expected: &Value, actual: &Value) -> bool {
        same(&self.canonical(expected), &self.canonical(actual))
    }
}

impl From<&ShapeSpec> for Equivalence {
    fn from(spec: &ShapeSpec) -> Equivalence {
        Equivalence {
            defaults: spec
                .defaults
                .iter()
                .map(|d| (d.member.clone(), d.value.clone()))
                .collect(),
            own_meta: spec.own_meta.iter().map(|m| m.key.clone()).collect(),
            unordered: spec.unordered.iter().map(|u| u.member.clone()).collect(),
            other_defaults: Vec::new(),
            other_own_meta: Vec::new(),
            undefined: spec.undefined.iter().map(|u| u.member.clone()).collect(),
            ignored: Vec::new(),
        }
    }
}

/// How values compare in `shape`: its defaults and answering-server keys. A catalogue
/// without the shape's file compares strictly.
pub fn rules(catalogue: &Catalogue, shape: Shape) -> Equivalence {
    let mut rules = catalogue
        .shapes
        .iter()
        .find(|spec| spec.id == shape)
        .map(Equivalence::from)
        .unwrap_or_default();
    let others = catalogue
        .shapes
        .iter()
        .filter(|spec| spec.id.protocol_version() != shape.protocol_version());
    rules.other_defaults = others
        .clone()
        .map(|spec| (spec.id, Equivalence::from(spec).defaults))
        .collect();
    rules.other_own_meta = others
        .map(|spec| (spec.id, Equivalence::from(spec).own_meta))
        .collect();
    rules
}

/// Whether two JSON values are the same value: numbers by exact value, objects as unordered
/// maps, arrays in order, `null` a value of its own.
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => same_number(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(key, value)| y.get(key).is_some_and(|other| same(value, other)))
        }
        _ => a == b,
    }
}

/// A key that sorts equal values together whatever the order of their members: the value
/// written with every object's members sorted.
fn sort_key(value: &Value) -> String {
    in_name_order(value).to_string()
}

/// The value with every object's members in name order: the same value (an object is
/// unordered), written so that two equal values read the same.
pub fn in_name_order(value: &Value) -> Value {
    match value {
        Value::Object(fields) => {
            let mut keys: Vec<&String> = fields.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), in_name_order(&fields[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(in_name_order).collect()),
        other => other.clone(),
    }
}

/// One object member's name as a JSON pointer token (RFC 6901: `~` and `/` escaped).
pub fn pointer_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// A pointer as a message shows it: the whole value is `/`, not the empty string.
fn place(at: &str) -> &str {
    if at.is_empty() { "/" } else { at }
}

/// Where `have` first differs from `want`, as a JSON pointer and what happened there
/// (`/arguments/0/title` dropped): a listing check that says only that `arguments` changed
/// leaves the vendor to find the difference in two pretty-printed values.
/// `at` is where the two values are, in the message the pointer begins with.
pub fn first_difference(want: &Value, have: &Value, at: &str) -> Option<String> {
    fn walk(want: &Value, have: &Value, at: &str) -> Option<String> {
        match (want, have) {
            (Value::Object(w), Value::Object(h)) => {
                for (key, value) in w {
                    let here = format!("{at}/{}", pointer_token(key));
                    match h.get(key) {
                        None => return Some(format!("`{here}` dropped")),
                        Some(other) => {
                            if let Some(found) = walk(value, other, &here) {
                                return Some(found);
                            }
                        }
                    }
                }
                h.keys()
                    .find(|key| !w.contains_key(*key))
                    .map(|key| format!("`{at}/{}` added", pointer_token(key)))
            }
            (Value::Array(w), Value::Array(h)) if w.len() == h.len() => w
                .iter()
                .zip(h)
                .enumerate()
                .find_map(|(i, (w, h))| walk(w, h, &format!("{at}/{i}"))),
            (Value::Array(w), Value::Array(h)) => Some(format!(
                "`{}` has {} items, not {}",
                place(at),
                h.len(),
                w.len()
            )),
            _ if same(want, have) => None,
            _ => Some(format!("`{}` changed", place(at))),
        }
    }
    walk(want, have, at)
}

/// [`same`] for values that may be missing: two absences are the same, an absence and a
/// value (even `null`) are not.
pub fn same_opt(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => same(a, b),
        (None, None) => true,
        _ => false,
    }
}

/// A JSON number as read: an integer held exactly, or a double.
enum Exact {
    Int(i128),
    Float(f64),
}

fn exact(n: &Number) -> Exact {
    if let Some(u) = n.as_u64() {
        Exact::Int(i128::from(u))
    } else if let Some(i) = n.as_i64() {
        Exact::Int(i128::from(i))
    } else {
        Exact::Float(n.as_f64().unwrap_or(f64::NAN))
    }
}

/// Exact value equality of two numbers. A double equals an integer only when it is integral
/// and converts to exactly that integer; the integer is never rounded to a double.
pub fn same_number(a: &Number, b: &Number) -> bool {
    match (exact(a), exact(b)) {
        (Exact::Int(x), Exact::Int(y)) => x == y,
        (Exact::Float(x), Exact::Float(y)) => x == y,
        (Exact::Int(i), Exact::Float(f)) | (Exact::Float(f), Exact::Int(i)) => float_is_int(f, i),
    }
}

fn float_is_int(f: f64, i: i128) -> bool {
    // 2^127: every integral double below it in magnitude converts to i128 without loss.
    const LIMIT: f64 = 170_141_183_460_469_231_731_687_303_715_884_105_728.0;
    f.is_finite() && f.fract() == 0.0 && f.abs() < LIMIT && f as i128 == i
}

/// How `actual` differs from `expected` in form only, one line each: defaults made explicit
/// or left out, the answering server's `_meta`, numbers written another way, members in
/// another order. Empty when the two are written alike. Only meaningful where the two are
/// [`Equivalence::same_result`].
pub fn form_changes(rules: &Equivalence, expected: &Value, actual: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let (Value::Object(sent), Value::Object(got)) = (expected, actual) {
        for (member, value) in &rules.defaults {
            match (sent.get(member), got.get(member)) {
                (None, Some(v)) if same(v, value) => {
                    out.push(format!("`{member}: {v}` added (the shape's default)"))
                }
                (Some(v), None) if same(v, value) => {
                    out.push(format!("`{member}: {v}` left out (the shape's default)"))
                }
                _ => {}
            }
        }
        let meta = |fields: &Map<String, Value>, key: &str| {
            fields.get("_meta").and_then(|m| m.get(key)).cloned()
        };
        for key in &rules.own_meta {
            match (meta(sent, key), meta(got, key)) {
                (None, Some(_)) => out.push(format!("`_meta` `{key}` added by the target")),
                (Some(_), None) => out.push(format!("`_meta` `{key}` left out by the target")),
                (Some(a), Some(b)) if !same(&a, &b) => {
                    out.push(format!("`_meta` `{key}` replaced by the target's own"))
                }
                _ => {}
            }
        }
        for member in &rules.unordered {
            if let (Some(x), Some(y)) = (sent.get(member), got.get(member))
                && !same(x, y)
            {
                out.push(format!(
                    "`{member}` in another order (its order means nothing in this shape)"
                ));
            }
        }
    }
    // Item by item, once unordered members are in one order on both sides.
    let (expected, actual) = (rules.in_one_order(expected), rules.in_one_order(actual));
    walk_form(&expected, &actual, &mut String::new(), &mut out);
    out
}

/// Number spellings and member orders that differ where the values agree.
fn walk_form(expected: &Value, actual: &Value, at: &mut String, out: &mut Vec<String>) {
    const MOST: usize = 24;
    if out.len() >= MOST {
        return;
    }
    match (expected, actual) {
        (Value::Number(x), Value::Number(y))
            if same_number(x, y) && x.to_string() != y.to_string() =>
        {
            out.push(format!("`{x}` written as `{y}` at `{}`", place(at)));
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (index, (x, y)) in x.iter().zip(y).enumerate() {
                let len = at.len();
                at.push_str(&format!("/{index}"));
                walk_form(x, y, at, out);
                at.truncate(len);
            }
        }
        (Value::Object(x), Value::Object(y)) => {
            let common_x: Vec<&String> = x.keys().filter(|k| y.contains_key(*k)).collect();
            let common_y: Vec<&String> = y.keys().filter(|k| x.contains_key(*k)).collect();
            if common_x != common_y {
                out.push(format!("members in another order at `{}`", place(at)));
            }
            for (key, value) in x {
                if let Some(other) = y.get(key) {
                    let len = at.len();
                    at.push('/');
                    at.push_str(&pointer_token(key));
                    walk_form(value, other, at, out);
                    at.truncate(len);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn released() -> Equivalence {
        Equivalence {
            defaults: vec![("isError".into(), json!(false))],
            own_meta: vec!["io.modelcontextprotocol/serverInfo".into()],
            unordered: Vec::new(),
            other_defaults: Vec::new(),
            other_own_meta: Vec::new(),
            undefined: Vec::new(),
            ignored: Vec::new(),
        }
    }

    fn stateless() -> Equivalence {
        let mut rules = released();
        rules
            .defaults
            .push(("resultType".into(), json!("complete")));
        rules
    }

    fn parse(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn forms_the_spec_treats_as_one_value_are_the_same() {
        let rules = released();
        let sent =
            parse(r#"{"content":[{"type":"text","text":"hi","annotations":{"priority":0}}]}"#);
        for got in [
            // isError absent means false
            r#"{"content":[{"type":"text","text":"hi","annotations":{"priority":0}}],"isError":false}"#,
            // 0 and 0.0 are one number
            r#"{"content":[{"type":"text","text":"hi","annotations":{"priority":0.0}}]}"#,
            // and so are 0 and 0e3
            r#"{"content":[{"type":"text","text":"hi","annotations":{"priority":0e3}}]}"#,
            // member order never matters
            r#"{"content":[{"annotations":{"priority":0},"text":"hi","type":"text"}]}"#,
        ] {
            assert!(rules.same_result(&sent, &parse(got)), "{got}");
            assert!(rules.same_result(&parse(got), &sent), "{got}, reversed");
        }
        assert!(same(&parse("100"), &parse("1e2")));
        assert!(same(&parse("-0.0"), &parse("0")));
        assert!(same(&parse("1.5"), &parse("1.50")));
    }

    #[test]
    fn real_changes_are_never_the_same() {
        let rules = released();
        let sent = parse(
            r#"{"content":[{"type":"text","text":"hi"}],"structuredContent":{"n":9007199254740993,"m":null},"isError":true}"#,
        );
        for got in [
            // a dropped member
            r#"{"content":[{"type":"text","text":"hi"}],"isError":true}"#,
            // an edited string
            r#"{"content":[{"type":"text","text":"hi!"}],"structuredContent":{"n":9007199254740993,"m":null},"isError":true}"#,
            // a large integer rounded
            r#"{"content":[{"type":"text","text":"hi"}],"structuredContent":{"n":9007199254740992,"m":null},"isError":true}"#,
            // the same integer as the double it rounds to
            r#"{"content":[{"type":"text","text":"hi"}],"structuredContent":{"n":9007199254740992.0,"m":null},"isError":true}"#,
            // null made absent
            r#"{"content":[{"type":"text","text":"hi"}],"structuredContent":{"n":9007199254740993},"isError":true}"#,
            // isError true made absent (absent means false)
            r#"{"content":[{"type":"text","text":"hi"}],"structuredContent":{"n":9007199254740993,"m":null}}"#,
            // a dropped block
            r#"{"content":[],"structuredContent":{"n":9007199254740993,"m":null},"isError":true}"#,
        ] {
            assert!(!rules.same_result(&sent, &parse(got)), "{got}");
            assert!(!rules.same_result(&parse(got), &sent), "{got}, reversed");
        }
        assert!(
            !same(&parse("[1,2]"), &parse("[2,1]")),
            "array order matters"
        );
        assert!(!same(&parse("{}"), &parse("null")));
        assert!(!same_opt(Some(&json!(null)), None), "null is not absent");
        assert!(!same(&parse("1"), &parse("1.0000000000000002")));
    }

    #[test]
    fn defaults_are_only_the_shapes_own() {
        let sent = json!({"content": []});
        let got = json!({"content": [], "resultType": "complete"});
        assert!(
            !released().same_result(&sent, &got),
            "2025 shapes have no resultType"
        );
        assert!(stateless().same_result(&sent, &got));
        assert!(
            !stateless().same_result(&sent, &json!({"content": [], "resultType": "task"})),
            "only the default value reads as absent"
        );
    }

    #[test]
    fn the_answering_servers_meta_belongs_to_the_answerer() {
        let rules = stateless();
        let info = "io.modelcontextprotocol/serverInfo";
        let sent = json!({"content": [], "_meta": {info: {"name": "upstream"}}});
        let replaced = json!({"content": [], "_meta": {info: {"name": "gateway"}}});
        let dropped = json!({"content": []});
        assert!(rules.same_result(&sent, &replaced));
        assert!(rules.same_result(&sent, &dropped));
        // Only its own key: every other _meta member still counts, and an empty _meta the
        // upstream wrote is not an absent one.
        let other = json!({"content": [], "_meta": {info: {}, "com.example/k": 1}});
        assert!(!rules.same_result(&other, &dropped));
        assert!(!rules.same_result(&json!({"content": [], "_meta": {}}), &dropped));
    }

    #[test]
    fn form_changes_name_each_difference_of_form() {
        let rules = stateless();
        let sent = parse(
            r#"{"content":[{"type":"text","text":"x","annotations":{"priority":0}}],"structuredContent":{"a":1,"b":2}}"#,
        );
        let got = parse(
            r#"{"resultType":"complete","isError":false,"structuredContent":{"b":2,"a":1.0},"content":[{"type":"text","text":"x","annotations":{"priority":0.0}}]}"#,
        );
        assert!(rules.same_result(&sent, &got));
        let changes = form_changes(&rules, &sent, &got);
        let all = changes.join("\n");
        for wanted in [
            "`isError: false` added",
            "`resultType: \"complete\"` added",
            "`0` written as `0.0` at `/content/0/annotations/priority`",
            "`1` written as `1.0` at `/structuredContent/a`",
            "members in another order at `/structuredContent`",
            "members in another order at `/`",
        ] {
            assert!(all.contains(wanted), "missing {wanted:?} in:\n{all}");
        }
        assert!(form_changes(&rules, &sent, &sent).is_empty());
    }

    #[test]
    fn an_unordered_member_in_another_order_is_the_same_value_and_said_so() {
        let mut rules = stateless();
        rules.unordered.push("outputs".into());
        let sent = json!({"outputs": [
            {"audience": "assistant", "format": "content", "content": []},
            {"audience": "assistant", "format": "structured", "structuredContent": {"a": 1}}]});
        let swapped = json!({"outputs": [
            {"structuredContent": {"a": 1}, "format": "structured", "audience": "assistant"},
            {"audience": "assistant", "format": "content", "content": []}]});
        assert!(rules.same_result(&sent, &swapped));
        let changes = form_changes(&rules, &sent, &swapped);
        assert!(
            changes
                .iter()
                .any(|c| c.contains("`outputs` in another order")),
            "{changes:?}"
        );
        // Other arrays keep their order, and an unordered member still compares its items.
        assert!(!stateless().same_result(&sent, &swapped));
        let other = json!({"outputs": [
            {"audience": "assistant", "format": "structured", "structuredContent": {"a": 2}},
            {"audience": "assistant", "format": "content", "content": []}]});
        assert!(!rules.same_result(&sent, &other));
    }

    #[test]
    fn the_first_difference_is_named_by_its_pointer() {
        let want = json!({"a": [{"b": 1, "c/d": 2}], "e": "x"});
        assert_eq!(first_difference(&want, &want.clone(), ""), None);
        // Members in another order, and numbers written otherwise, are the same value.
        assert_eq!(
            first_difference(&want, &json!({"e": "x", "a": [{"c/d": 2.0, "b": 1}]}), ""),
            None
        );
        let cases = [
            (json!({"a": [{"b": 1}], "e": "x"}), "`/a/0/c~1d` dropped"),
            (
                json!({"a": [{"b": 1, "c/d": 3}], "e": "x"}),
                "`/a/0/c~1d` changed",
            ),
            (json!({"a": [], "e": "x"}), "`/a` has 0 items, not 1"),
            (
                json!({"a": [{"b": 1, "c/d": 2}], "e": "x", "f": 0}),
                "`/f` added",
            ),
            (json!([1]), "`/` changed"),
        ];
        for (have, said) in cases {
            assert_eq!(
                first_difference(&want, &have, "").as_deref(),
                Some(said),
                "{have}"
            );
        }
        assert_eq!(
            first_difference(&json!([1]), &json!([2]), "/arguments").as_deref(),
            Some("`/arguments/0` changed")
        );
    }

    /// A 2025 client of a gateway whose upstream spoke 2026-07-28: the upstream's
    /// `resultType: "complete"` is what an absent member means there, so a bridge that leaves
    /// it out keeps the value; an `input_required` it leaves out is still lost.
    #[test]
    fn a_bridge_reads_the_upstream_legs_defaults_too() {
        let mut rules = released();
        rules.other_defaults = vec![(Shape::V2026_07_28, stateless().defaults)];
        let sent = json!({"content": [], "resultType": "complete"});
        let got = json!({"content": []});
        assert!(!rules.same_result(&sent, &got));
        let across = rules.across(Shape::V2026_07_28);
        assert!(across.same_result(&sent, &got));
        let asked = json!({"content": [], "resultType": "input_required"});
        assert!(!across.same_result(&asked, &got));
        // A leg of this shape's own protocol version reads nothing new.
        assert_eq!(rules.across(Shape::V2025_11_25), rules);
    }
}
