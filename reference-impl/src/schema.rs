//! Just enough JSON Schema to know which cuts keep a value valid.
//!
//! This is not a validator. It answers "may this array be shortened / this property be
//! dropped / this string be cut?" and answers "no" whenever the schema uses a keyword whose
//! effect it cannot see (composition, enum, const, contains, ...): a refused cut costs some
//! context, a wrong one hands the model an invalid value that claims to be valid.

use serde_json::{Map, Value};

const MAX_REF_HOPS: usize = 16;

/// A position in a schema, or the absence of one.
#[derive(Clone, Copy, Debug)]
pub struct SchemaNode<'a> {
    root: Option<&'a Value>,
    node: Node<'a>,
}

#[derive(Clone, Copy, Debug)]
enum Node<'a> {
    /// No schema: every cut is allowed.
    Any,
    /// A schema this module cannot reason about: no cut is allowed.
    Opaque,
    Schema(&'a Map<String, Value>),
}

const OPAQUE_KEYWORDS: &[&str] = &[
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "enum",
    "const",
    "contains",
    "minContains",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "unevaluatedItems",
    "unevaluatedProperties",
    "$dynamicRef",
    "$recursiveRef",
];

impl<'a> SchemaNode<'a> {
    pub fn any() -> Self {
        SchemaNode {
            root: None,
            node: Node::Any,
        }
    }

    pub fn root(schema: Option<&'a Value>) -> Self {
        match schema {
            None => Self::any(),
            Some(s) => SchemaNode {
                root: Some(s),
                node: resolve(s, s),
            },
        }
    }

    fn child(&self, v: Option<&'a Value>) -> Self {
        match (v, self.root) {
            (Some(v), Some(root)) => SchemaNode {
                root: Some(root),
                node: resolve(root, v),
            },
            (Some(_), None) | (None, _) => Self::any(),
        }
    }

    fn opaque(&self) -> Self {
        SchemaNode {
            root: self.root,
            node: Node::Opaque,
        }
    }

    /// `Some(minItems)` if the array may be shortened (to no fewer than that many items).
    pub fn array_min_items(&self) -> Option<usize> {
        match self.node {
            Node::Any => Some(0),
            Node::Opaque => None,
            Node::Schema(m) => Some(usize_kw(m, "minItems")),
        }
    }

    pub fn item(&self, index: usize) -> Self {
        match self.node {
            Node::Any => *self,
            Node::Opaque => *self,
            Node::Schema(m) => {
                if let Some(Value::Array(prefix)) = m.get("prefixItems") {
                    if let Some(s) = prefix.get(index) {
                        return self.child(Some(s));
                    }
                    return self.child(m.get("items"));
                }
                match m.get("items") {
                    // Draft-07 tuple form.
                    Some(Value::Array(tuple)) => match tuple.get(index) {
                        Some(s) => self.child(Some(s)),
                        None => self.child(m.get("additionalItems")),
                    },
                    other => self.child(other),
                }
            }
        }
    }

    /// `Some(minProperties)` if non-required properties may be dropped.
    pub fn object_min_properties(&self) -> Option<usize> {
        match self.node {
            Node::Any => Some(0),
            Node::Opaque => None,
            Node::Schema(m) => Some(usize_kw(m, "minProperties")),
        }
    }

    pub fn is_required(&self, key: &str) -> bool {
        match self.node {
            Node::Schema(m) => m
                .get("required")
                .and_then(Value::as_array)
                .is_some_and(|r| r.iter().any(|x| x.as_str() == Some(key))),
            _ => false,
        }
    }

    pub fn property(&self, key: &str) -> Self {
        match self.node {
            Node::Any | Node::Opaque => *self,
            Node::Schema(m) => {
                if let Some(p) = m
                    .get("properties")
                    .and_then(Value::as_object)
                    .and_then(|p| p.get(key))
                {
                    return self.child(Some(p));
                }
                if m.contains_key("patternProperties") {
                    return self.opaque();
                }
                self.child(m.get("additionalProperties"))
            }
        }
    }

    /// Declared property names, for "project known fields".
    pub fn property_names(&self) -> Vec<&'a str> {
        match self.node {
            Node::Schema(m) => m
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().map(String::as_str).collect())
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// `Some(minLength)` if the string may be shortened.
    pub fn string_min_length(&self) -> Option<usize> {
        match self.node {
            Node::Any => Some(0),
            Node::Opaque => None,
            Node::Schema(m) => {
                let fixed = ["pattern", "format", "contentEncoding", "contentMediaType"];
                if fixed.iter().any(|k| m.contains_key(*k)) {
                    None
                } else {
                    Some(usize_kw(m, "minLength"))
                }
            }
        }
    }

    /// `maxLength`, so a cut string with its marker still validates.
    pub fn string_max_length(&self) -> Option<usize> {
        match self.node {
            Node::Schema(m) => m
                .get("maxLength")
                .and_then(Value::as_u64)
                .map(|u| u as usize),
            _ => None,
        }
    }
}

fn usize_kw(m: &Map<String, Value>, k: &str) -> usize {
    m.get(k)
        .and_then(Value::as_u64)
        .map_or(0, |u| usize::try_from(u).unwrap_or(usize::MAX))
}

fn resolve<'a>(root: &'a Value, mut s: &'a Value) -> Node<'a> {
    for _ in 0..MAX_REF_HOPS {
        match s {
            Value::Bool(true) => return Node::Any,
            Value::Bool(false) => return Node::Opaque,
            Value::Object(m) => {
                if let Some(r) = m.get("$ref") {
                    let Some(target) = r
                        .as_str()
                        .and_then(|r| r.strip_prefix('#'))
                        .and_then(|ptr| root.pointer(ptr))
                    else {
                        // Network or unresolvable refs are never dereferenced.
                        return Node::Opaque;
                    };
                    s = target;
                    continue;
                }
                if OPAQUE_KEYWORDS.iter().any(|k| m.contains_key(*k)) {
                    return Node::Opaque;
                }
                return Node::Schema(m);
            }
            _ => return Node::Opaque,
        }
    }
    Node::Opaque
}
