//! Projection: keep the fields a tool's consumer needs, drop the rest, rename nothing.
//!
//! Identifiers, `_meta` and schema-required fields are always kept, whatever the keep list
//! says, because projection is where identifiers silently disappear.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::envelope::{Cut, CutKind, Unit};
use crate::fields::is_identifier;
use crate::schema::SchemaNode;

/// Projects `v`. An empty `keep` list means "the fields the schema declares".
pub fn project(
    v: &Value,
    keep: &[String],
    s: SchemaNode<'_>,
    path: &str,
    cuts: &mut Vec<Cut>,
) -> Value {
    let mut dropped: BTreeMap<String, u64> = BTreeMap::new();
    let out = walk(v, keep, s, path, &mut dropped, 0).unwrap_or_else(|| match v {
        Value::Object(_) => Value::Object(Map::new()),
        other => other.clone(),
    });
    for (p, n) in dropped {
        cuts.push(Cut {
            path: p,
            kind: CutKind::Projected,
            kept: 0,
            total: n,
            unit: Unit::Fields,
        });
    }
    out
}

fn walk(
    v: &Value,
    keep: &[String],
    s: SchemaNode<'_>,
    path: &str,
    dropped: &mut BTreeMap<String, u64>,
    depth: usize,
) -> Option<Value> {
    if depth > 256 {
        return Some(v.clone());
    }
    match v {
        Value::Object(m) => {
            let declared = if keep.is_empty() {
                s.property_names()
            } else {
                Vec::new()
            };
            let mut out = Map::new();
            for (k, x) in m {
                let wanted = keep.iter().any(|w| w == k)
                    || declared.contains(&k.as_str())
                    || is_identifier(k)
                    || k == "_meta"
                    || s.is_required(k);
                let p = crate::pointer::join(path, k);
                if wanted {
                    out.insert(k.clone(), x.clone());
                } else if let Some(px) = (matches!(x, Value::Object(_) | Value::Array(_)))
                    .then(|| walk(x, keep, s.property(k), &p, dropped, depth + 1))
                    .flatten()
                {
                    out.insert(k.clone(), px);
                } else {
                    *dropped.entry(p).or_default() += 1;
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        Value::Array(a) => {
            let p = format!("{path}/*");
            let items: Vec<Option<Value>> = a
                .iter()
                .enumerate()
                .map(|(i, x)| walk(x, keep, s.item(i), &p, dropped, depth + 1))
                .collect();
            if items.iter().all(Option::is_none) {
                return None;
            }
            // Keep positions: a row that projects to nothing is an empty row, not a gap.
            Some(Value::Array(
                items
                    .into_iter()
                    .zip(a)
                    .map(|(p, orig)| {
                        p.unwrap_or_else(|| match orig {
                            Value::Object(_) => Value::Object(Map::new()),
                            other => other.clone(),
                        })
                    })
                    .collect(),
            ))
        }
        _ => None,
    }
}
