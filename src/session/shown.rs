//! What a permission float shows of the tool call a request is about: the
//! card the core holds (the request is merged into it before it is shown)
//! over the request's own `toolCall`. Agents point at a card they announced
//! earlier and send little else: Mistral Vibe's requests carry only the
//! tool-call id, fast-agent's edit requests a path and a length while the
//! diff is on the card.

use serde_json::{json, Map, Value};

use crate::model::entries::{ToolCall, ToolContent};

/// The card's locations, diffs and text, and its raw input (the one-line
/// summary the card keeps), in the shape of an ACP tool call. Terminals
/// are left out (the card shows them; a question never needs them).
pub fn card_view(tc: &ToolCall) -> Value {
    let mut out = Map::new();
    if !tc.locations.is_empty() {
        let locations = tc
            .locations
            .iter()
            .map(|(path, line)| match line {
                Some(n) => json!({"path": path, "line": n}),
                None => json!({"path": path}),
            })
            .collect();
        out.insert("locations".into(), Value::Array(locations));
    }
    let content: Vec<Value> = tc
        .content
        .iter()
        .filter_map(|c| match c {
            ToolContent::Diff {
                path,
                old_text,
                new_text,
                ..
            } => {
                let mut d = json!({"type": "diff", "path": path, "newText": new_text});
                if let Some(old) = old_text {
                    d["oldText"] = json!(old);
                }
                Some(d)
            }
            ToolContent::Text { text } if !text.is_empty() => {
                Some(json!({"type": "content", "content": {"type": "text", "text": text}}))
            }
            _ => None,
        })
        .collect();
    if !content.is_empty() {
        out.insert("content".into(), Value::Array(content));
    }
    if let Some(raw) = &tc.raw_input {
        out.insert("rawInput".into(), json!(raw));
    }
    Value::Object(out)
}

/// The request's params with its `toolCall` replaced by what the float
/// shows: the request's tool call, with the card's content and locations
/// (the card already holds the request's own, merged as an update), and
/// the card's raw input when the request carries none. Nothing else of
/// the params comes along.
pub fn shown_params(params: &Value, card: Option<&Value>) -> Value {
    let mut tool = params
        .get("toolCall")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if let Some(card) = card.and_then(Value::as_object) {
        for (key, value) in card {
            let absent = tool.get(key).is_none_or(Value::is_null);
            if key == "content" || key == "locations" || absent {
                tool.insert(key.clone(), value.clone());
            }
        }
    }
    json!({ "toolCall": tool })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::thread::Thread;
    use crate::model::update::parse_permission_request;

    /// The card the thread holds after the recorded `updates` and the
    /// request `params` (merged into it as the core does before asking).
    fn card(updates: &[Value], params: &Value) -> ToolCall {
        let mut t = Thread::new("agent");
        t.begin_turn("go");
        for u in updates {
            let mut u = u.clone();
            if u.get("sessionUpdate").is_none() {
                u["sessionUpdate"] = json!("tool_call_update");
            }
            t.apply_json(&u);
        }
        let request = parse_permission_request(params);
        t.permission_requested(&request.tool_call, &request.dropped);
        t.tool_call(&request.tool_call.id).unwrap().clone()
    }

    fn shown(updates: &[Value], params: Value) -> Value {
        shown_params(&params, Some(&card_view(&card(updates, &params))))
    }

    #[test]
    fn a_request_with_only_an_id_shows_the_card_it_points_to() {
        // Mistral Vibe 3.0.2: the shell card, then a request with the id only.
        let only_id = json!({"toolCall": {"toolCallId": "t"}});
        let vibe_shell = json!({"toolCallId": "t", "title": "bash: cat a | tee b",
            "kind": "execute", "rawInput": {"command": "cat a | tee b"}, "sessionUpdate": "tool_call"});
        assert_eq!(
            shown(&[vibe_shell], only_id.clone()),
            json!({"toolCall": {"toolCallId": "t", "rawInput": "cat a | tee b"}})
        );
        // Its edit card: the diff (and `d` review) and the locations.
        let vibe_edit = json!({"toolCallId": "t", "title": "Editing hello.txt", "kind": "edit",
            "content": [{"type": "diff", "path": "/p/hello.txt", "oldText": "Hello, world!", "newText": "Hello, ACP!"}],
            "locations": [{"path": "/p/hello.txt", "line": 3}],
            "rawInput": {"filePath": "/p/hello.txt"}, "sessionUpdate": "tool_call"});
        assert_eq!(
            shown(&[vibe_edit], only_id)["toolCall"],
            json!({"toolCallId": "t", "rawInput": "/p/hello.txt",
                "locations": [{"path": "/p/hello.txt", "line": 3}],
                "content": [{"type": "diff", "path": "/p/hello.txt", "oldText": "Hello, world!", "newText": "Hello, ACP!"}]})
        );
    }

    #[test]
    fn what_the_request_carries_stays_and_the_card_adds_its_diff() {
        // fast-agent 0.10.48: the diff comes in an update; the request
        // carries kind, title and a raw input of its own.
        let updates = [
            json!({"toolCallId": "t", "title": "write_text_file", "kind": "edit", "status": "pending",
                "content": [], "sessionUpdate": "tool_call"}),
            json!({"toolCallId": "t", "content": [{"type": "diff", "path": "/p/hello.txt", "newText": "Hello, ACP!\n"}]}),
            json!({"toolCallId": "t", "status": "pending", "title": "write_text_file"}),
        ];
        let params = json!({"toolCall": {"toolCallId": "t", "kind": "edit", "status": "pending",
            "title": "write_text_file", "rawInput": {"path": "/p/hello.txt", "content_length": 12}},
            "options": [], "_client": 1});
        assert_eq!(
            shown(&updates, params),
            json!({"toolCall": {"toolCallId": "t", "kind": "edit", "status": "pending", "title": "write_text_file",
                "rawInput": {"path": "/p/hello.txt", "content_length": 12},
                "content": [{"type": "diff", "path": "/p/hello.txt", "newText": "Hello, ACP!\n"}]}})
        );
        // A diff the request carries (Kimi) is the one shown.
        let kimi = json!({"toolCall": {"toolCallId": "t", "title": "StrReplaceFile: hello.txt",
            "content": [{"type": "diff", "path": "/p/hello.txt", "oldText": "a", "newText": "b"}]}});
        let empty = json!({"toolCallId": "t", "title": "StrReplaceFile", "status": "in_progress",
            "content": [{"type": "content", "content": {"type": "text", "text": ""}}], "sessionUpdate": "tool_call"});
        assert_eq!(
            shown(&[empty], kimi.clone())["toolCall"]["content"],
            kimi["toolCall"]["content"]
        );
    }

    #[test]
    fn an_unknown_call_shows_only_what_the_request_carries() {
        let params = json!({"toolCall": {"toolCallId": "ghost"}});
        assert_eq!(shown(&[], params.clone()), params);
        assert_eq!(shown_params(&params, None), params);
        assert_eq!(shown_params(&json!(7), None), json!({"toolCall": {}}));
    }
}
