//! A trained model as JSON: `{"format": "fanfuse-fusion-model", "version": 1, "method": "probfuse",
//! "segments": 25, "tables": [[...], ...]}` (`segments` for probfuse, `window` for slidefuse only).
//! Floats are written in their shortest round-trip form, so a model reads back bit for bit. Reading
//! checks every field and names the first bad one.

use serde_json::{Map, Value};

use super::trained::{TrainedMethod, TrainedModel};
use crate::error::FusionError;

pub const FORMAT: &str = "fanfuse-fusion-model";
pub const VERSION: u64 = 1;
const KNOWN: [&str; 6] = ["format", "version", "method", "segments", "window", "tables"];

impl TrainedModel {
    /// The model as one line of JSON.
    #[must_use]
    pub fn to_json(&self) -> String {
        let mut out = Map::new();
        out.insert("format".into(), FORMAT.into());
        out.insert("version".into(), VERSION.into());
        out.insert("method".into(), self.method.name().into());
        if let Some(segments) = self.segments {
            out.insert("segments".into(), segments.into());
        }
        if let Some(window) = self.window {
            out.insert("window".into(), window.into());
        }
        out.insert("tables".into(), self.tables.iter().map(|t| Value::from(t.clone())).collect::<Vec<_>>().into());
        Value::Object(out).to_string()
    }

    /// Reads a model written by [`Self::to_json`]; errors name the field and what is accepted.
    pub fn from_json(text: &str) -> Result<Self, FusionError> {
        let bad = |message: String| FusionError::invalid(format!("fusion model: {message}"));
        let value: Value = serde_json::from_str(text).map_err(|e| bad(format!("not JSON ({e})")))?;
        let Value::Object(fields) = value else {
            return Err(bad("expected a JSON object with format, version, method and tables".into()));
        };
        if let Some(unknown) = fields.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            return Err(bad(format!("unknown field '{unknown}'; the fields are {}", KNOWN.join(", "))));
        }
        let field = |name: &str| fields.get(name).ok_or_else(|| bad(format!("field '{name}' is missing")));
        if field("format")?.as_str() != Some(FORMAT) {
            return Err(bad(format!("field 'format' must be \"{FORMAT}\" (got {})", field("format")?)));
        }
        if field("version")?.as_u64() != Some(VERSION) {
            return Err(bad(format!(
                "field 'version' must be {VERSION} (got {}); this fanfuse reads version {VERSION} models",
                field("version")?
            )));
        }
        let method = field("method")?;
        let method: TrainedMethod = method
            .as_str()
            .ok_or_else(|| bad(format!("field 'method' must be a string (got {method})")))?
            .parse()
            .map_err(|e: FusionError| bad(format!("field {e}")))?;
        let size = |name: &str| -> Result<Option<usize>, FusionError> {
            fields
                .get(name)
                .map(|v| {
                    v.as_u64()
                        .and_then(|n| usize::try_from(n).ok())
                        .ok_or_else(|| bad(format!("field '{name}' must be an int >= 0 (got {v})")))
                })
                .transpose()
        };
        let (segments, window) = (size("segments")?, size("window")?);
        let tables = field("tables")?;
        let tables = tables
            .as_array()
            .ok_or_else(|| bad(format!("field 'tables' must be a list of lists of numbers (got {tables})")))?
            .iter()
            .enumerate()
            .map(|(r, table)| {
                let values = table
                    .as_array()
                    .ok_or_else(|| bad(format!("field 'tables[{r}]' must be a list of numbers (got {table})")))?;
                values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        v.as_f64().ok_or_else(|| bad(format!("field 'tables[{r}][{i}]' must be a number (got {v})")))
                    })
                    .collect::<Result<Vec<f64>, _>>()
            })
            .collect::<Result<Vec<_>, _>>()?;
        let model = Self { method, tables, segments, window };
        model.validate().map_err(|e| bad(e.to_string()))?;
        Ok(model)
    }

    /// `FusionModel(method="probfuse", runs=2, segments=25)`: the model as Python shows it.
    #[must_use]
    pub fn describe(&self) -> String {
        let sizes = match (self.segments, self.window) {
            (Some(s), _) => format!(", segments={s}"),
            (_, Some(w)) => format!(", window={w}"),
            _ => String::new(),
        };
        format!("FusionModel(method={:?}, runs={}{sizes})", self.method.name(), self.tables.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_bit_for_bit_and_names_bad_fields() {
        let model = TrainedModel {
            method: TrainedMethod::SlideFuse,
            tables: vec![vec![0.1, 1.0 / 3.0, 0.0], vec![]],
            segments: None,
            window: Some(2),
        };
        let text = model.to_json();
        assert_eq!(TrainedModel::from_json(&text).unwrap(), model);
        let err = |t: &str| TrainedModel::from_json(t).unwrap_err().to_string();
        let broken = text.replace("\"version\":1", "\"version\":2");
        assert!(err(&broken).starts_with("fusion model: field 'version' must be 1 (got 2)"), "{}", err(&broken));
        let broken = text.replace("0.1,", "\"x\",");
        assert_eq!(err(&broken), "fusion model: field 'tables[0][0]' must be a number (got \"x\")");
        let broken = text.replace("slidefuse", "rrf");
        assert!(err(&broken).starts_with("fusion model: field method must be 'probfuse'"), "{}", err(&broken));
        assert!(err("[1]").starts_with("fusion model: expected a JSON object"));
        assert!(err(&text.replace("\"window\"", "\"w\"")).starts_with("fusion model: unknown field 'w'"));
        assert_eq!(model.describe(), "FusionModel(method=\"slidefuse\", runs=2, window=2)");
    }
}
