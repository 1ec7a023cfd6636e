//! The lists of names the Python module publishes (`fanfuse.METHODS`, `fanfuse.METRICS`, ...), and
//! its tables of names by key, by attribute, each taken from the table that parses those names (see
//! `crate::names`).

use crate::eval::{metric_names, trec_eval_metric_names};
use crate::fusion::{Duplicates, Method, Norm, TrainedMethod, OPTIONS};
use crate::rrf::TieBreak;
use crate::runs::write::OutFormat;
use crate::runs::RankFrom;

/// Every published list of names: `(attribute, names)`.
#[must_use]
pub fn name_lists() -> Vec<(&'static str, Vec<String>)> {
    let list = |names: &[&str]| names.iter().map(|&name| name.to_owned()).collect();
    let score_methods = crate::fusion::method_table().into_iter().filter(|m| m.2).map(|m| m.0.to_owned()).collect();
    vec![
        ("FUSION_OPTIONS", OPTIONS.iter().map(|o| o.0.to_owned()).collect()),
        ("METHODS", list(&Method::NAMES)),
        ("TRAINED_METHODS", list(&TrainedMethod::NAMES)),
        ("NORMS", list(&Norm::NAMES)),
        ("TIE_BREAKS", list(&TieBreak::NAMES)),
        ("DUPLICATE_POLICIES", list(&Duplicates::NAMES)),
        ("RANK_SOURCES", list(&RankFrom::NAMES)),
        ("RUN_FORMATS", list(&OutFormat::NAMES)),
        ("METRICS", metric_names().map(str::to_owned).collect()),
        ("TREC_EVAL_METRICS", trec_eval_metric_names().collect()),
        ("SCORE_METHODS", score_methods),
    ]
}

/// Names by key: `(key, names)`.
pub type NameTable = Vec<(&'static str, Vec<&'static str>)>;

/// Every published table of names by key (`METHOD_PARAMETERS`: each method's settable options):
/// `(attribute, [(key, names)])`.
#[must_use]
pub fn name_maps() -> Vec<(&'static str, NameTable)> {
    let parameters = crate::fusion::method_table().into_iter().map(|(name, settable, _)| (name, settable)).collect();
    vec![("METHOD_PARAMETERS", parameters)]
}

#[cfg(test)]
mod tests {
    use super::{name_lists, name_maps};

    #[test]
    fn every_list_has_names_each_once() {
        let lists = name_lists();
        for (attribute, names) in &lists {
            let unique: std::collections::HashSet<&String> = names.iter().collect();
            assert!(!names.is_empty() && unique.len() == names.len(), "{attribute}: {names:?}");
        }
        let score_methods = &lists.iter().find(|l| l.0 == "SCORE_METHODS").unwrap().1;
        assert!(!score_methods.contains(&"rrf".to_owned()) && score_methods.contains(&"combsum".to_owned()));
    }

    #[test]
    fn every_table_has_keys_each_once() {
        for (attribute, table) in name_maps() {
            let keys: std::collections::HashSet<&str> = table.iter().map(|entry| entry.0).collect();
            assert!(!table.is_empty() && keys.len() == table.len(), "{attribute}");
        }
    }
}
