//! Recognising which of the many `tools/call` shapes arrived.
//!
//! The order is fixed (see result-shapes.md, section 6): error, flat task handle, nested task
//! handle, input_required, SEP-3279 outputs, then CallToolResult. The order matters because
//! the shapes overlap: a flat task handle has `status`, a 2025-11-25 handle has `task`, and
//! only the discriminators read in this order tell them apart.

use serde_json::{Map, Value};

use crate::envelope::{Framing, ShapeKind};

pub enum Body {
    Error(Value),
    Result(Value),
    /// A JSON-RPC response with neither `result` nor `error`.
    Missing,
}

pub struct Unwrapped {
    pub framing: Framing,
    pub id: Option<Value>,
    pub body: Body,
}

/// Separates JSON-RPC framing from the result, accepting a bare result as well.
pub fn unwrap(body: Value) -> Unwrapped {
    let Value::Object(mut m) = body else {
        return Unwrapped {
            framing: Framing::BareResult,
            id: None,
            body: Body::Result(body),
        };
    };
    // The top level of a response has a few members: linear scans and one pass over them
    // cost less than hashing each key looked up (a bare result with many members pays a few
    // scans of its keys, little beside parsing them).
    let has = |key: &str| m.keys().any(|k| k == key);
    let is_response = has("jsonrpc") || (has("id") && (has("result") || has("error")));
    if is_response {
        let (mut id, mut error, mut result) = (None, None, None);
        for (k, v) in m {
            match k.as_str() {
                "id" => id = Some(v),
                "error" => error = Some(v),
                "result" => result = Some(v),
                _ => {}
            }
        }
        let body = match (error, result) {
            (Some(e), _) if !e.is_null() => Body::Error(e),
            (_, Some(r)) => Body::Result(r),
            _ => Body::Missing,
        };
        return Unwrapped {
            framing: Framing::JsonrpcResponse,
            id,
            body,
        };
    }
    if is_bare_error(&m) {
        let e = m.remove("error").unwrap_or(Value::Null);
        return Unwrapped {
            framing: Framing::BareResult,
            id: None,
            body: Body::Error(e),
        };
    }
    Unwrapped {
        framing: Framing::BareResult,
        id: None,
        body: Body::Result(Value::Object(m)),
    }
}

/// `{error:{code,message}}` with nothing result-like beside it.
fn is_bare_error(m: &Map<String, Value>) -> bool {
    let err_like = m
        .get("error")
        .and_then(Value::as_object)
        .is_some_and(|e| e.contains_key("code") || e.contains_key("message"));
    err_like
        && ![
            "content",
            "outputs",
            "resultType",
            "taskId",
            "structuredContent",
        ]
        .iter()
        .any(|k| m.contains_key(*k))
}

pub fn classify(result: &Value) -> ShapeKind {
    let Value::Object(m) = result else {
        return ShapeKind::Malformed;
    };
    let rt = m.get("resultType").and_then(Value::as_str);
    if rt == Some("task") {
        return ShapeKind::TaskHandleFlat;
    }
    if !m.contains_key("resultType") && m.get("task").is_some_and(Value::is_object) {
        return ShapeKind::TaskHandleNested;
    }
    if rt == Some("input_required") {
        return ShapeKind::InputRequired;
    }
    if m.get("outputs").is_some_and(Value::is_array) {
        return ShapeKind::Outputs;
    }
    if m.get("taskId").is_some()
        && m.get("status").is_some_and(Value::is_string)
        && !m.contains_key("content")
    {
        return ShapeKind::TaskStatus;
    }
    ShapeKind::CallToolResult
}

pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn discrimination_order() {
        // resultType "task" wins over everything else present.
        assert_eq!(
            classify(
                &json!({"resultType":"task","taskId":"t","status":"working","task":{},"outputs":[]})
            ),
            ShapeKind::TaskHandleFlat
        );
        // nested handle only without resultType.
        assert_eq!(
            classify(&json!({"task":{"taskId":"t"}})),
            ShapeKind::TaskHandleNested
        );
        assert_eq!(
            classify(&json!({"resultType":"complete","task":{"taskId":"t"},"content":[]})),
            ShapeKind::CallToolResult
        );
        assert_eq!(
            classify(&json!({"resultType":"input_required","outputs":[]})),
            ShapeKind::InputRequired
        );
        assert_eq!(
            classify(&json!({"outputs":[],"content":[]})),
            ShapeKind::Outputs
        );
        assert_eq!(classify(&json!({"content":[]})), ShapeKind::CallToolResult);
        assert_eq!(classify(&json!({})), ShapeKind::CallToolResult);
        assert_eq!(classify(&json!([1])), ShapeKind::Malformed);
    }

    #[test]
    fn error_wins_over_result() {
        let u =
            unwrap(json!({"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"},"result":{}}));
        assert!(matches!(u.body, Body::Error(_)));
        assert_eq!(u.id, Some(json!(1)));
    }
}
