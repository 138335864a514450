//! The verdict of one check, as every report keeps it.

use serde_json::Value;

/// The verdict of one check.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Verdict {
    /// The check's name.
    pub check: String,
    /// Whether it held; meaningless when not `applicable`.
    pub passed: bool,
    /// False when the target does not show what the check needs: the case is then
    /// not applicable to it, never passed.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub applicable: bool,
    /// Why, in a sentence a vendor can check against the evidence.
    pub message: String,
    /// What the check wanted to see (the upstream's value, for a comparison).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub expected: Option<Value>,
    /// What the client got.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub actual: Option<Value>,
    /// Where in the result `expected` and `actual` were read, for a check of one member (a
    /// JSON pointer); absent when they are the whole result or error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// For a check that held what the client got to what the upstream sent and found them
    /// apart: whether a value changed or only its form. A changed value is shown wherever it
    /// is found, at any level; a difference of form alone is information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub differs: Option<Difference>,
}

/// What a comparison of the client's answer with the upstream's found apart.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Difference {
    /// A value changed: a member dropped, added or rewritten, a number's value changed.
    Value,
    /// The same value, written otherwise (member order, a default spelled out, a number's
    /// spelling).
    Form,
}

/// A member that is there is `Some`, `null` included: a `null` the upstream sent is evidence,
/// and reading results.jsonl back must not turn it into nothing at all.
fn present<'de, D: serde::Deserializer<'de>>(from: D) -> Result<Option<Value>, D::Error> {
    <Value as serde::Deserialize>::deserialize(from).map(Some)
}

fn yes() -> bool {
    true
}

fn is_true(value: &bool) -> bool {
    *value
}

impl Verdict {
    /// The target does not show what the check needs: neither a pass nor a failure.
    pub fn not_applicable(check: &str, message: impl Into<String>) -> Verdict {
        Verdict {
            applicable: false,
            ..Verdict::pass(check, message)
        }
    }

    /// The check held.
    pub fn pass(check: &str, message: impl Into<String>) -> Verdict {
        Verdict {
            check: check.into(),
            applicable: true,
            passed: true,
            message: message.into(),
            expected: None,
            actual: None,
            at: None,
            differs: None,
        }
    }

    /// The check did not hold.
    pub fn fail(check: &str, message: impl Into<String>) -> Verdict {
        Verdict {
            check: check.into(),
            applicable: true,
            passed: false,
            message: message.into(),
            expected: None,
            actual: None,
            at: None,
            differs: None,
        }
    }

    /// The same verdict with the values it compared, for the report to show side by side.
    pub fn compared(mut self, expected: Option<Value>, actual: Option<Value>) -> Verdict {
        self.expected = expected;
        self.actual = actual;
        self
    }

    /// Says where in the result the compared values were read.
    pub fn at(mut self, pointer: &str) -> Verdict {
        self.at = Some(pointer.to_string());
        self
    }

    /// Says the client's answer holds another value than the upstream's.
    pub fn value_differs(mut self) -> Verdict {
        self.differs = Some(Difference::Value);
        self
    }

    /// Says the client's answer holds the upstream's value, written otherwise.
    pub fn form_differs(mut self) -> Verdict {
        self.differs = Some(Difference::Form);
        self
    }
}
