//! One line of the MT-RAG retrieval JSONL format:
//! `{"task_id": ..., "Collection": ..., "contexts": [{"document_id": ..., "score": ..., ...}]}`,
//! contexts in rank order. Fields of a context other than `document_id` and `score` are kept as raw
//! JSON in their original order, so fusion passes them through unchanged.

use std::fmt;

use indexmap::IndexMap;
use serde::de::{Deserializer, Error as _, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::runs::Hit;

#[derive(Deserialize)]
struct Line {
    task_id: String,
    #[serde(rename = "Collection")]
    collection: Option<String>,
    contexts: Vec<Context>,
}

/// One context's fields in their order; a field given twice is refused, as the record's own fields
/// are (a map would keep the last value: another document id, another score, read silently).
struct Context(IndexMap<String, Box<RawValue>>);

impl<'de> Deserialize<'de> for Context {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = Context;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a context object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Context, A::Error> {
                let mut fields = IndexMap::new();
                while let Some((key, value)) = map.next_entry::<String, Box<RawValue>>()? {
                    if fields.contains_key(&key) {
                        return Err(A::Error::custom(format_args!("duplicate field `{key}` in a context")));
                    }
                    fields.insert(key, value);
                }
                Ok(Context(fields))
            }
        }
        deserializer.deserialize_map(Fields)
    }
}

#[derive(Debug)]
pub struct Record {
    pub qid: String,
    pub collection: Option<String>,
    pub hits: Vec<Hit>,
}

pub fn parse_line(line: &str, line_no: u64) -> Result<Record, String> {
    if !line.trim_start().starts_with('{') {
        return Err(
            "the line is not a JSON object; MT-RAG lines are {\"task_id\", \"Collection\", \"contexts\": [...]}".into(),
        );
    }
    let parsed: Line = serde_json::from_str(line).map_err(|e| {
        // JSON may hold a carriage return between tokens, so a file with CR-only line ends reads as one line.
        let hint = if line.contains('\r') { " (the line holds a carriage return: lines end in \\n or \\r\\n)" } else { "" };
        format!("not an MT-RAG retrieval record ({e}){hint}; expected {{\"task_id\": str, \"contexts\": [{{\"document_id\": str, \"score\": number, ...}}]}}")
    })?;
    if parsed.task_id.is_empty() {
        return Err("task_id is empty; every record needs a non-empty query id".into());
    }
    if let Some(problem) = super::fields::length_problem(parsed.task_id.len()) {
        return Err(format!("task_id {problem}"));
    }
    let mut hits = Vec::with_capacity(parsed.contexts.len());
    for (position, Context(mut context)) in parsed.contexts.into_iter().enumerate() {
        let docid: String = context
            .shift_remove("document_id")
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
            .ok_or_else(|| format!("contexts[{position}] has no string \"document_id\""))?;
        if docid.is_empty() {
            return Err(format!("contexts[{position}].document_id is empty; every context needs a non-empty id"));
        }
        if let Some(problem) = super::fields::length_problem(docid.len()) {
            return Err(format!("contexts[{position}].document_id {problem}"));
        }
        // A context without a score reads as NaN, no score: ranks from the context order do without
        // one (`RankFrom`), ranks from the scores refuse it (`order_hits`), as for a table.
        let score: f64 = match context.shift_remove("score") {
            Some(raw) => serde_json::from_str(raw.get())
                .map_err(|_| format!("contexts[{position}].score {} is not a number", raw.get()))?,
            None => f64::NAN,
        };
        let extra: crate::runs::Extra = context.into_iter().map(|(k, v)| (k.into_boxed_str(), v)).collect();
        hits.push(Hit {
            docid: docid.into(),
            score,
            rank: i64::try_from(position).unwrap_or(i64::MAX) + 1,
            line: line_no,
            extra: if extra.is_empty() { None } else { Some(Box::new(extra)) },
        });
    }
    Ok(Record { qid: parsed.task_id, collection: parsed.collection, hits })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_extra_fields_in_order_as_raw_json() {
        let r =
            parse_line(r#"{"task_id":"q","contexts":[{"text":"a \"b\"","document_id":"d","score":2,"n":[1, 2]}]}"#, 3)
                .unwrap();
        let extra = r.hits[0].extra.as_ref().unwrap();
        assert_eq!(
            extra.iter().map(|(k, v)| (&**k, v.get())).collect::<Vec<_>>(),
            [("text", r#""a \"b\"""#), ("n", "[1, 2]")]
        );
        assert_eq!(r.hits[0].rank, 1);
    }

    #[test]
    fn scores_parse_to_the_closest_double() {
        for text in ["-1.704240339106099e289", "0.1", "2.2250738585072014e-308", "1.7976931348623157e308"] {
            let r = parse_line(&format!(r#"{{"task_id":"q","contexts":[{{"document_id":"d","score":{text}}}]}}"#), 1)
                .unwrap();
            assert_eq!(r.hits[0].score.to_bits(), text.parse::<f64>().unwrap().to_bits(), "{text}");
        }
    }

    #[test]
    fn rejects_non_objects_and_missing_fields() {
        assert!(parse_line("[1, 2]", 1).unwrap_err().contains("not a JSON object"));
        for field in ["document_id", "score", "text"] {
            let line =
                format!(r#"{{"task_id":"q","contexts":[{{"document_id":"d","score":1,"text":"a","{field}":"x"}}]}}"#);
            let refused = parse_line(&line, 1).unwrap_err();
            assert!(refused.contains(&format!("duplicate field `{field}` in a context")), "{refused}");
        }
        assert!(parse_line(r#"{"task_id":"q","contexts":[{"score":1}]}"#, 1).unwrap_err().contains("document_id"));
        assert!(parse_line(r#"{"task_id":"q","contexts":[{"document_id":"d","score":"x"}]}"#, 1)
            .unwrap_err()
            .contains("score"));
        assert!(parse_line(r#"{"task_id":"","contexts":[]}"#, 1).unwrap_err().contains("task_id is empty"));
        assert!(parse_line(r#"{"task_id":"q","contexts":[{"document_id":"","score":1}]}"#, 1)
            .unwrap_err()
            .contains("contexts[0].document_id is empty"));
        assert!(parse_line("{\"task_id\":\"q\",\"contexts\":[]}\r{}", 1).unwrap_err().contains("carriage return"));
        let long = "d".repeat(super::super::fields::MAX_FIELD_BYTES + 1);
        let line = format!(r#"{{"task_id":"q","contexts":[{{"document_id":"{long}","score":1}}]}}"#);
        assert!(parse_line(&line, 1).unwrap_err().starts_with("contexts[0].document_id is 65537 bytes long"));
        let line = format!(r#"{{"task_id":"{long}","contexts":[]}}"#);
        assert!(parse_line(&line, 1).unwrap_err().starts_with("task_id is 65537 bytes long"));
    }
}
