//! Structure-preserving cuts of a JSON value.
//!
//! Every cut leaves a value of the same shape: arrays lose trailing items (never gain a
//! marker of the wrong type), objects lose optional fields (identifiers, `_meta` and
//! required fields stay), strings lose their tail. When the schema forbids the cut the
//! answer is `None` and the caller substitutes a marker object for the whole value.

use serde_json::{Map, Value};

use crate::envelope::{Cut, CutKind, Unit};
use crate::fields::is_identifier;
use crate::jsonsize::{json_size, prefix_within, str_json_size};
use crate::schema::SchemaNode;

const MAX_DEPTH: usize = 256;

pub struct Fitter<'c> {
    pub cuts: &'c mut Vec<Cut>,
}

impl Fitter<'_> {
    /// A value no larger than `budget` compact-JSON bytes, or `None` if the schema does not
    /// allow a cut that small. `known` is `v`'s size when the caller already computed it.
    #[allow(clippy::too_many_arguments)]
    pub fn fit(
        &mut self,
        v: &Value,
        s: SchemaNode<'_>,
        budget: usize,
        path: &str,
        identifier: bool,
        known: Option<usize>,
        depth: usize,
    ) -> Option<Value> {
        self.fit_fields_sized(v, s, budget, path, identifier, known, None, depth)
    }

    /// As [`Fitter::fit`], with `field_sizes` (when `v` is an object) the sizes of its
    /// fields' values in map order, as the caller already walked them to size `v`: sizing a
    /// large structured value twice cost as much as reading it. A size above `budget` may be
    /// any value above it (the caller can stop measuring there); so may `known`.
    #[allow(clippy::too_many_arguments)]
    pub fn fit_fields_sized(
        &mut self,
        v: &Value,
        s: SchemaNode<'_>,
        budget: usize,
        path: &str,
        identifier: bool,
        known: Option<usize>,
        field_sizes: Option<&[usize]>,
        depth: usize,
    ) -> Option<Value> {
        let size = known.unwrap_or_else(|| json_size(v));
        if size <= budget {
            return Some(v.clone());
        }
        if depth > MAX_DEPTH {
            return None;
        }
        let mark = self.cuts.len();
        let r = match v {
            Value::Array(a) => self.fit_array(a, s, budget, path, depth),
            Value::Object(m) => self.fit_object(m, s, budget, path, depth, field_sizes),
            Value::String(t) if !identifier => self.fit_string(t, s, budget, path),
            _ => None,
        };
        if r.is_none() {
            self.cuts.truncate(mark);
        }
        r
    }

    fn fit_array(
        &mut self,
        a: &[Value],
        s: SchemaNode<'_>,
        budget: usize,
        path: &str,
        depth: usize,
    ) -> Option<Value> {
        let min = s.array_min_items()?;
        let mut out = Vec::new();
        let mut used = 2usize;
        for (i, item) in a.iter().enumerate() {
            let isz = json_size(item);
            let sep = usize::from(!out.is_empty());
            if used + sep + isz <= budget {
                out.push(item.clone());
                used += sep + isz;
                continue;
            }
            if out.len() < min.max(1) {
                let rem = budget.saturating_sub(used + sep);
                let p = format!("{path}/{i}");
                if let Some(c) = self.fit(item, s.item(i), rem, &p, false, Some(isz), depth + 1) {
                    out.push(c);
                }
            }
            break;
        }
        if out.len() < min {
            return None;
        }
        if out.len() < a.len() {
            let rows = a
                .first()
                .is_some_and(|x| matches!(x, Value::Object(_) | Value::Array(_)));
            self.cuts.push(Cut {
                path: path.to_string(),
                kind: CutKind::ArrayShortened,
                kept: out.len() as u64,
                total: a.len() as u64,
                unit: if rows { Unit::Rows } else { Unit::Items },
            });
        }
        Some(Value::Array(out))
    }

    fn fit_object(
        &mut self,
        m: &Map<String, Value>,
        s: SchemaNode<'_>,
        budget: usize,
        path: &str,
        depth: usize,
        field_sizes: Option<&[usize]>,
    ) -> Option<Value> {
        let min_props = s.object_min_properties()?;
        let field_sizes = field_sizes.filter(|f| f.len() == m.len());
        struct E<'v> {
            key: &'v str,
            val: &'v Value,
            key_cost: usize,
            size: usize,
            /// False when `size` came from the caller, who may have stopped counting above
            /// the budget.
            exact: bool,
            priority: bool,
            ident: bool,
            required: bool,
        }
        let entries: Vec<E<'_>> = m
            .iter()
            .enumerate()
            .map(|(i, (k, v))| {
                let ident = is_identifier(k);
                let required = s.is_required(k) || k == "_meta";
                E {
                    key: k,
                    val: v,
                    key_cost: str_json_size(k) + 1,
                    size: field_sizes.map_or_else(|| json_size(v), |f| f[i]),
                    exact: field_sizes.is_none(),
                    priority: ident || required,
                    ident,
                    required,
                }
            })
            .collect();
        let mut kept: Vec<Option<Value>> = vec![None; entries.len()];
        let mut used = 2usize;
        let mut count = 0usize;
        let mut dropped: Vec<usize> = Vec::new();

        // Whole priority fields first: identifiers, required fields and `_meta`.
        for (i, e) in entries.iter().enumerate().filter(|(_, e)| e.priority) {
            let cost = e.key_cost + e.size + usize::from(count > 0);
            if used + cost <= budget {
                kept[i] = Some(e.val.clone());
                used += cost;
                count += 1;
            }
        }
        // Priority fields that did not fit whole: cut, or give up if they must stay.
        for (i, e) in entries.iter().enumerate().filter(|(_, e)| e.priority) {
            if kept[i].is_some() {
                continue;
            }
            let sep = usize::from(count > 0);
            let rem = budget.saturating_sub(used + e.key_cost + sep);
            // `_meta` describes its siblings; cutting it apart from them misleads.
            let cut = if e.key == "_meta" {
                None
            } else {
                let p = crate::pointer::join(path, e.key);
                self.fit(
                    e.val,
                    s.property(e.key),
                    rem,
                    &p,
                    e.ident,
                    Some(e.size),
                    depth + 1,
                )
            };
            match cut {
                Some(c) => {
                    used += e.key_cost + sep + json_size(&c);
                    count += 1;
                    kept[i] = Some(c);
                }
                None if e.required => return None,
                None => dropped.push(i),
            }
        }
        // Small optional fields whole (counts, totals, flags), then big ones cut.
        let small = budget / 8;
        for (i, e) in entries.iter().enumerate().filter(|(_, e)| !e.priority) {
            let cost = e.key_cost + e.size + usize::from(count > 0);
            if e.size <= small && used + cost <= budget {
                kept[i] = Some(e.val.clone());
                used += cost;
                count += 1;
            }
        }
        for (i, e) in entries.iter().enumerate().filter(|(_, e)| !e.priority) {
            if kept[i].is_some() {
                continue;
            }
            let sep = usize::from(count > 0);
            let cost = e.key_cost + e.size + sep;
            if used + cost <= budget {
                kept[i] = Some(e.val.clone());
                used += cost;
                count += 1;
                continue;
            }
            let rem = budget.saturating_sub(used + e.key_cost + sep);
            let p = crate::pointer::join(path, e.key);
            let cut = if rem >= 16 {
                self.fit(
                    e.val,
                    s.property(e.key),
                    rem,
                    &p,
                    false,
                    Some(e.size),
                    depth + 1,
                )
            } else {
                None
            };
            match cut {
                Some(c) => {
                    used += e.key_cost + sep + json_size(&c);
                    count += 1;
                    kept[i] = Some(c);
                }
                None => dropped.push(i),
            }
        }
        if count < min_props {
            return None;
        }
        dropped.sort_unstable();
        for i in dropped {
            let e = &entries[i];
            let total = if e.exact || e.size <= budget {
                e.size
            } else {
                json_size(e.val)
            };
            self.cuts.push(Cut {
                path: crate::pointer::join(path, e.key),
                kind: CutKind::FieldDropped,
                kept: 0,
                total: total as u64,
                unit: Unit::Bytes,
            });
        }
        let mut out = Map::new();
        for (e, v) in entries.iter().zip(kept) {
            if let Some(v) = v {
                out.insert(e.key.to_string(), v);
            }
        }
        Some(Value::Object(out))
    }

    fn fit_string(
        &mut self,
        t: &str,
        s: SchemaNode<'_>,
        budget: usize,
        path: &str,
    ) -> Option<Value> {
        let min_len = s.string_min_length()?;
        let total = t.len();
        let suffix_full = format!(" …[cut: {total} of {total} bytes]");
        let (suffix_len, plain_suffix) = match s.string_max_length() {
            Some(_) => ("…".len(), true),
            None => (suffix_full.len(), false),
        };
        if budget < suffix_len + 8 {
            return None;
        }
        let mut end = prefix_within(t, budget - suffix_len);
        if let Some(max) = s.string_max_length() {
            let limit = max.saturating_sub(1);
            if let Some((i, _)) = t[..end].char_indices().nth(limit) {
                end = i;
            }
        }
        if t[..end].chars().count() < min_len {
            return None;
        }
        let kept = &t[..end];
        let text = if plain_suffix {
            format!("{kept}…")
        } else {
            format!("{kept} …[cut: {end} of {total} bytes]")
        };
        self.cuts.push(Cut {
            path: path.to_string(),
            kind: CutKind::StringShortened,
            kept: end as u64,
            total: total as u64,
            unit: Unit::Bytes,
        });
        Some(Value::String(text))
    }
}
