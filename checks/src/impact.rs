//! The predicted impact of a shape on one case: which members of the case's result its checks
//! read that the shape changes, against the shape it is compared with.
//!
//! A shape changes a member in two ways, and both count. It can render the case's own answer
//! differently (SEP-3279 moves `content` into `outputs[]`; a task handle changes form): that is
//! found by rendering the case's upstream answer in both shapes and comparing the two under the
//! shape's rules, so a default written out (`resultType: "complete"`) is no change. Or it can
//! change what a member may hold or mean without changing this answer's bytes (2026-07-28 lets
//! `structuredContent` be any JSON value): that is the shape file's `moves`, counted where the
//! case's answer had the member in the shape it is compared with. A case whose checks read none of the changed members is
//! predicted not to move, which is what makes the prediction worth checking against a run.

use std::collections::BTreeSet;

use relaycheck_model::Shape;
use relaycheck_model::case::CaseSpec;
use relaycheck_model::catalogue::ShapeSpec;
use relaycheck_model::render::render_result;
use relaycheck_model::script::{HandleForm, Respond};
use serde_json::{Value, json};

use crate::{CheckDef, Equivalence, Fields, same};

/// The members of `case`'s result its checks read that `shape` changes against `base`, in
/// name order; empty when the shape is predicted to leave the case as it is. `shapes` are the
/// catalogue's shape files, whose `moves` and `compared_with` say what each changes.
pub fn predicted(case: &CaseSpec, shape: Shape, base: Shape, shapes: &[ShapeSpec]) -> Vec<String> {
    if shape == base {
        return Vec::new();
    }
    let answer = Answer::of(case);
    let before = answer.members(base);
    let present = answer.members(shape).union(&before).cloned().collect();
    let read = read_members(case, &present);
    let rules = shapes
        .iter()
        .find(|spec| spec.id == shape)
        .map(Equivalence::from)
        .unwrap_or_default();
    let mut changed = answer.rendered_changes(shape, base, &rules);
    // A declared move changes a member the answer already had: one the shape adds is in the
    // rendered changes, or reads as its default and is no change at all.
    changed.extend(
        declared_moves(shape, base, shapes)
            .into_iter()
            .filter(|member| before.contains(member)),
    );
    if case.tool.output_schema.is_some() && (shape == Shape::Sep3279) != (base == Shape::Sep3279) {
        // A SEP-3279 client is listed outputVariants where others are listed outputSchema.
        changed.extend(["outputSchema".to_string(), "outputVariants".to_string()]);
    }
    read.intersection(&changed).cloned().collect()
}

/// The shape a run of `shape` is compared with: the one its file names (`compared_with`), or
/// none for the first revision.
pub fn compared_with(shape: Shape, shapes: &[ShapeSpec]) -> Option<Shape> {
    shapes
        .iter()
        .find(|spec| spec.id == shape)
        .and_then(|spec| spec.compared_with)
}

/// What each shape from `shape` back to `base` says it moves, following `compared_with`; every
/// member a shape file names when `base` is not among them (a comparison the files do not
/// chain, which then predicts more rather than less).
fn declared_moves(shape: Shape, base: Shape, shapes: &[ShapeSpec]) -> BTreeSet<String> {
    let mut moved = BTreeSet::new();
    let mut at = Some(shape);
    let mut steps = 0;
    while let Some(current) = at {
        if current == base {
            return moved;
        }
        let Some(spec) = shapes.iter().find(|spec| spec.id == current) else {
            break;
        };
        moved.extend(spec.moves.iter().cloned());
        at = spec.compared_with;
        steps += 1;
        if steps > shapes.len() {
            break;
        }
    }
    shapes
        .iter()
        .flat_map(|spec| spec.moves.iter().cloned())
        .chain(moved)
        .collect()
}

/// Whether one of the case's checks reads `member` by name (not as part of a whole result).
pub fn names_member(case: &CaseSpec, member: &str) -> bool {
    let none = BTreeSet::new();
    case.expect.iter().any(|expectation| {
        CheckDef::named(&expectation.check).is_some_and(|def| {
            !matches!(def.fields, Fields::Whole)
                && read_members(
                    &CaseSpec {
                        expect: vec![expectation.clone()],
                        ..case.clone()
                    },
                    &none,
                )
                .contains(member)
        })
    })
}

/// The members the case's checks read, of those its answer has.
fn read_members(case: &CaseSpec, present: &BTreeSet<String>) -> BTreeSet<String> {
    let mut read = BTreeSet::new();
    for expectation in &case.expect {
        let Some(def) = CheckDef::named(&expectation.check) else {
            continue;
        };
        match def.fields {
            Fields::None => {}
            Fields::Named(members) => read.extend(members.iter().map(|m| m.to_string())),
            Fields::At(default) => {
                let pointer = expectation
                    .params
                    .get("pointer")
                    .and_then(Value::as_str)
                    .unwrap_or(default);
                match pointer.split('/').nth(1).filter(|first| !first.is_empty()) {
                    Some(first) => {
                        read.insert(first.replace("~1", "/").replace("~0", "~"));
                    }
                    None => read.extend(present.iter().cloned()),
                }
            }
            Fields::Whole => read.extend(present.iter().cloned()),
        }
    }
    read
}

/// The case's upstream answer, as far as shapes render it differently.
enum Answer {
    /// A result in legacy form, rendered into each shape.
    Result(Value),
    /// A result sent as written in every shape.
    Raw(Value),
    /// A JSON-RPC error.
    Error,
    /// A task handle, in the form each shape gives it, with `_meta` when the script has it.
    Task { meta: bool },
    /// An `input_required` answer.
    InputRequired,
    /// No well-formed answer at all.
    Fault,
}

impl Answer {
    fn of(case: &CaseSpec) -> Answer {
        match &case.tool.respond {
            Some(respond) => Answer::of_respond(respond),
            None => Answer::of_named(case.tool.canary.as_deref(), &case.tool.arguments),
        }
    }

    fn of_respond(respond: &Respond) -> Answer {
        match respond {
            Respond::Result(legacy) => Answer::Result(legacy.clone()),
            Respond::RawResult(raw) => Answer::Raw(raw.clone()),
            Respond::Error(_) => Answer::Error,
            Respond::Task(task) => Answer::Task {
                meta: task.meta.is_some(),
            },
            Respond::Echo => Answer::Result(json!({"content": [], "structuredContent": {}})),
            Respond::Oversized(_) => Answer::Result(json!({"content": []})),
            Respond::Rows(rows) => Answer::Result(rows.result()),
            Respond::Progress(progress) => Answer::of_respond(&progress.then),
            Respond::Log(log) => Answer::of_respond(&log.then),
            Respond::ListChange(change) => Answer::of_respond(&change.then),
            Respond::ResourceUpdate(update) => Answer::of_respond(&update.then),
            Respond::AskClient(_) => Answer::Result(json!({"content": [], "_meta": {}})),
            Respond::InputRequired(_) => Answer::InputRequired,
            Respond::Fault(_) => Answer::Fault,
        }
    }

    /// The named canaries' answers, by what the case's arguments make them return.
    fn of_named(name: Option<&str>, arguments: &serde_json::Map<String, Value>) -> Answer {
        let mut result = serde_json::Map::new();
        result.insert("content".into(), json!([]));
        match name {
            Some("rpc_error") => return Answer::Error,
            Some("task_handle") => {
                return Answer::Task {
                    meta: arguments.contains_key("meta"),
                };
            }
            Some("is_error") => {
                result.insert("isError".into(), json!(true));
            }
            Some("echo" | "structured_links") => {
                result.insert("structuredContent".into(), json!({}));
            }
            _ => {}
        }
        if arguments.contains_key("structured") {
            result.insert("structuredContent".into(), json!({}));
        }
        if arguments.contains_key("meta") || name == Some("meta") {
            result.insert("_meta".into(), json!({}));
        }
        Answer::Result(Value::Object(result))
    }

    /// The members the answer has in `shape`.
    fn members(&self, shape: Shape) -> BTreeSet<String> {
        match self {
            Answer::Result(legacy) => keys(&render_result(legacy, shape, None)),
            Answer::Raw(raw) => keys(raw),
            Answer::Error => ["error".to_string()].into(),
            Answer::Task { meta } => {
                let mut members: BTreeSet<String> = ["task-handle".to_string()].into();
                if *meta {
                    members.insert("_meta".into());
                }
                members
            }
            Answer::InputRequired => ["resultType", "inputRequests", "requestState"]
                .map(str::to_string)
                .into(),
            Answer::Fault => BTreeSet::new(),
        }
    }

    /// The members whose value differs between the answer rendered in `shape` and in `base`,
    /// read under `shape`'s rules.
    fn rendered_changes(&self, shape: Shape, base: Shape, rules: &Equivalence) -> BTreeSet<String> {
        match self {
            Answer::Result(legacy) => {
                let (now, before) = (
                    rules.canonical(&render_result(legacy, shape, None)),
                    rules.canonical(&render_result(legacy, base, None)),
                );
                keys(&now)
                    .union(&keys(&before))
                    .filter(|member| match (now.get(*member), before.get(*member)) {
                        (Some(a), Some(b)) => !same(a, b),
                        _ => true,
                    })
                    .cloned()
                    .collect()
            }
            Answer::Task { .. } if task_form(shape) != task_form(base) => {
                ["task-handle".to_string()].into()
            }
            _ => BTreeSet::new(),
        }
    }
}

/// The form a task handle takes in `shape`; `None` where the shape has no tasks.
fn task_form(shape: Shape) -> Option<HandleForm> {
    shape
        .has(relaycheck_model::shape::Feature::Tasks)
        .then(|| HandleForm::for_shape(shape))
}

fn keys(value: &Value) -> BTreeSet<String> {
    value
        .as_object()
        .map(|fields| fields.keys().cloned().collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(id: Shape, compared_with: Option<Shape>, moves: &[&str]) -> ShapeSpec {
        ShapeSpec {
            id,
            title: String::new(),
            status: String::new(),
            protocol_version: id.protocol_version().to_string(),
            description: String::new(),
            compared_with,
            moves: moves.iter().map(|m| m.to_string()).collect(),
            source: String::new(),
            defaults: Vec::new(),
            own_meta: Vec::new(),
            unordered: Vec::new(),
            undefined: Vec::new(),
        }
    }

    fn shapes() -> Vec<ShapeSpec> {
        vec![
            shape(Shape::V2025_06_18, None, &[]),
            shape(
                Shape::V2025_11_25,
                Some(Shape::V2025_06_18),
                &["task-handle", "error"],
            ),
            shape(
                Shape::V2026_07_28,
                Some(Shape::V2025_11_25),
                &["structuredContent", "_meta"],
            ),
            shape(
                Shape::Sep3279,
                Some(Shape::V2026_07_28),
                &["content", "outputs"],
            ),
        ]
    }

    fn case(yaml: &str) -> CaseSpec {
        let value: Value = yaml_serde::from_str(yaml).expect("yaml");
        serde_json::from_value(value).expect("a case")
    }

    #[test]
    fn a_check_of_a_member_no_shape_moves_is_not_predicted() {
        let is_error = case(
            "{id: a/b, level: must, requirement: r, source: s, tool: {canary: is_error}, expect: [{check: is-error, value: true}]}",
        );
        assert!(predicted(&is_error, Shape::Sep3279, Shape::V2026_07_28, &shapes()).is_empty());
        let relayed = case(
            "{id: a/b, level: must, requirement: r, source: s, tool: {canary: is_error}, expect: [{check: relayed-unchanged}]}",
        );
        assert_eq!(
            predicted(&relayed, Shape::Sep3279, Shape::V2026_07_28, &shapes()),
            ["content", "outputs"]
        );
    }

    #[test]
    fn a_default_written_out_is_no_change_and_a_declared_move_needs_the_member() {
        let plain = case(
            "{id: a/b, level: must, requirement: r, source: s, tool: {respond: {result: {content: []}}}, expect: [{check: relayed-unchanged}]}",
        );
        // 2026-07-28 adds `resultType: complete`, its own default; the answer has neither
        // structuredContent nor _meta.
        let mut with_default = shapes();
        with_default[2]
            .defaults
            .push(relaycheck_model::catalogue::MemberDefault {
                member: "resultType".into(),
                of: "Result".into(),
                value: json!("complete"),
                source: String::new(),
                says: String::new(),
            });
        assert!(
            predicted(
                &plain,
                Shape::V2026_07_28,
                Shape::V2025_11_25,
                &with_default
            )
            .is_empty()
        );
        let structured = case(
            "{id: a/b, level: must, requirement: r, source: s, tool: {respond: {result: {content: [], structuredContent: {a: 1}}}}, expect: [{check: kept, pointer: /structuredContent}]}",
        );
        assert_eq!(
            predicted(
                &structured,
                Shape::V2026_07_28,
                Shape::V2025_11_25,
                &with_default
            ),
            ["structuredContent"]
        );
    }

    #[test]
    fn moves_chain_back_to_the_base_and_task_forms_are_compared() {
        let task = case(
            "{id: a/b, level: must, requirement: r, source: s, tool: {canary: task_handle}, expect: [{check: task-handle}]}",
        );
        assert_eq!(
            predicted(&task, Shape::V2026_07_28, Shape::V2025_11_25, &shapes()),
            ["task-handle"]
        );
        let error = case(
            "{id: a/b, level: must, requirement: r, source: s, tool: {canary: rpc_error}, expect: [{check: protocol-error}]}",
        );
        // sep-3279 back to 2025-06-18 passes 2025-11-25, which moves `error`.
        assert_eq!(
            predicted(&error, Shape::Sep3279, Shape::V2025_06_18, &shapes()),
            ["error"]
        );
        assert!(predicted(&error, Shape::Sep3279, Shape::V2026_07_28, &shapes()).is_empty());
        let listing = case(
            "{id: a/b, level: must, requirement: r, source: s, tool: {canary: echo}, expect: [{check: arguments-kept}]}",
        );
        assert!(predicted(&listing, Shape::Sep3279, Shape::V2025_06_18, &shapes()).is_empty());
    }
}
