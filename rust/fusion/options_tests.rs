//! The tests of `options.rs`: unknown and unread options, refusals naming their option, the defaults, the checks of values and combinations, equality, properties.

use super::*;

fn parse(values: Vec<(&str, Value)>) -> Result<FusionOptions, FusionError> {
    FusionOptions::parse(values).map_err(|e| e.error)
}

#[test]
fn an_unknown_or_unread_option_is_refused_naming_the_entry() {
    assert_eq!(option_named("fuse", "k").unwrap().1, Kind::Number);
    assert!(option_named("fuse", "kk")
        .unwrap_err()
        .to_string()
        .starts_with("fuse() got an unexpected keyword argument 'kk'"));
    let options = parse(vec![("k", Value::Number(1.0)), ("explain", Value::Flag(true))]).unwrap();
    assert!(options.check_read_by("fuse", |_| true, false).is_ok());
    let refused = options.check_read_by("fuse_runs", |name| name != "explain", false).unwrap_err().to_string();
    assert!(refused.starts_with("fuse_runs() got an unexpected keyword argument 'explain'"), "{refused}");
    let refused = options.check_read_by("fuse_runs", |name| name != "explain", true).unwrap_err().to_string();
    assert!(refused.starts_with("fuse_runs() does not read the fusion option 'explain' that options= holds"));
}

#[test]
fn a_refusal_names_its_option() {
    let option = |values| FusionOptions::parse(values).unwrap_err().option;
    assert_eq!(option(vec![("sigma", Value::Number(2.0))]), "sigma");
    assert_eq!(option(vec![("tie_break", Value::Name("x".into()))]), "tie_break");
    let norm = vec![("norm", Value::Name("max".into())), ("method", Value::Name("rrf".into()))];
    assert_eq!(option(norm), "norm");
    let weights = vec![("method", Value::Name("isr".into())), ("weights", Value::Numbers(vec![1.0]))];
    assert_eq!(option(weights), "weights");
}

#[test]
fn defaults_differ_only_in_the_unset_top_k() {
    let options = parse(vec![]).unwrap();
    assert_eq!(options.fuse_params().unwrap().top_k, None);
    assert_eq!(options.run_params(None).unwrap().top_k, Some(RUN_FILE_TOP_K));
    let all = parse(vec![("top_k", Value::None)]).unwrap();
    assert_eq!(all.run_params(None).unwrap().top_k, None);
}

#[test]
fn values_and_combinations_are_checked_once() {
    let error = |values| parse(values).unwrap_err().to_string();
    assert!(error(vec![("k", Value::Number(0.0))]).starts_with("k must be"));
    assert!(error(vec![("weights", Value::Numbers(vec![1.0, -1.0]))]).starts_with("weights[1] must be"));
    assert!(error(vec![("method", Value::Name("nope".into()))]).starts_with("method must be one of"));
    let isr_weights = vec![("method", Value::Name("isr".into())), ("weights", Value::Numbers(vec![1.0, 2.0]))];
    assert!(error(isr_weights).contains("has no per-list weights"));
    let rrf_norm = vec![("method", Value::Name("rrf".into())), ("norm", Value::Name("max".into()))];
    assert!(error(rrf_norm).contains("reads ranks only"));
    let unset_method = parse(vec![("norm", Value::Name("max".into()))]).unwrap();
    let refused = unset_method.fuse_params().unwrap_err();
    assert!(refused.error.to_string().contains("reads ranks only") && refused.option == "norm");
    assert!(error(vec![("k", Value::Name("x".into()))]).contains("wrong kind"));
}

#[test]
fn a_trained_method_needs_a_model() {
    let options = parse(vec![("method", Value::Name("probfuse".into()))]).unwrap();
    assert!(options.fuse_params().is_err());
    assert!(options.run_params(None).unwrap_err().error.to_string().contains("trained on qrels"));
    assert!(!options.takes_weights());
}

#[test]
fn equal_values_are_equal_however_given() {
    assert_eq!(parse(vec![]).unwrap(), parse(vec![("k", Value::Number(60.0))]).unwrap());
    assert_ne!(parse(vec![]).unwrap(), parse(vec![("top_k", Value::None)]).unwrap());
    let given = parse(vec![("phi", Value::Number(0.5)), ("k", Value::Number(1.0))]).unwrap();
    assert_eq!(given.given(), ["k", "phi"]);
}

#[test]
fn a_property_is_the_method_in_effect_or_an_option() {
    let unset = parse(vec![]).unwrap();
    assert_eq!(unset.property("method"), Some(Value::Name("rrf".into())));
    assert_eq!(unset.value("method"), Some(Value::None));
    assert_eq!(unset.property("reads_scores"), Some(Value::Flag(false)));
    assert_eq!(unset.property("takes_weights"), Some(Value::Flag(true)));
    assert_eq!(unset.property("k"), unset.value("k"));
    assert_eq!(unset.property("nope"), None);
    let scored = parse(vec![("method", Value::Name("combsum".into()))]).unwrap();
    assert_eq!(scored.property("reads_scores"), Some(Value::Flag(true)));
}
