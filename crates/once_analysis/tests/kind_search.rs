//! Kind discovery over the real prelude: realistic queries rank the expected kind first
//! and never pad the answer with unrelated ecosystems.

use std::path::PathBuf;
use std::sync::Arc;

use once_analysis::{AnalysisHost, kind_search};
use once_fixture::Fixture;

fn kinds() -> Vec<once_model::KindSchema> {
    let system = Fixture::parse("//- /once.toml\n[workspace]\n").system();
    let host = AnalysisHost::load(Arc::new(system), PathBuf::from(once_fixture::ROOT));
    host.analysis().kinds().expect("not cancelled")
}

/// `query` ranks `first` first, and every result belongs to `ecosystems` (any ecosystem
/// when the query names none).
fn check(query: &str, first: &str, ecosystems: &[&str]) {
    let kinds = kinds();
    let found = once_analysis::search_kinds(&kinds, query);
    let names: Vec<&str> = found.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(
        names.first().copied(),
        Some(first),
        "query {query:?} gave {names:?}"
    );
    for kind in found.iter().filter(|_| !ecosystems.is_empty()) {
        let ecosystem = kind_search::ecosystem(kind);
        assert!(
            ecosystems.contains(&ecosystem),
            "query {query:?} gave `{}` from `{ecosystem}`: {names:?}",
            kind.name
        );
    }
}

#[test]
fn realistic_queries_rank_the_expected_kind_first() {
    check("rust binary", "rust_binary", &["rust"]);
    check(
        "create a minimal runnable Rust command-line application binary",
        "rust_binary",
        &["rust"],
    );
    check("rust library", "rust_library", &["rust"]);
    check("rust tests", "rust_test", &["rust"]);
    check("cargo library", "rust_library", &["rust"]);
    check("python tests", "pytest_test", &["python"]);
    check("pytest", "pytest_test", &["python"]);
    check("python library", "python_library", &["python"]);
    check("python binary", "python_binary", &["python"]);
    check("c library for rust", "c_library", &["c"]);
    check("c++ library", "c_library", &["c"]);
    check("c test", "c_test", &["c"]);
    check("go binary", "go_binary", &["go"]);
    check("golang library", "go_library", &["go"]);
    check("go tests", "go_test", &["go"]);
    check("node test runner", "node_test", &["js"]);
    check("javascript library", "js_library", &["js"]);
    check("node binary", "node_binary", &["js"]);
    check("shell test", "sh_test", &["sh"]);
    check("bash script binary", "sh_binary", &["sh", "generic"]);
    check("filegroup", "filegroup", &[]);
    check("annotated script", "script", &[]);
    check("bazel genrule", "command", &[]);
    check("command", "command", &[]);
}

#[test]
fn stop_words_do_not_match() {
    let kinds = kinds();
    let found = once_analysis::search_kinds(&kinds, "go and rust");
    assert!(!found.is_empty());
    for kind in found {
        assert!(
            ["go", "rust"].contains(&kind_search::ecosystem(kind)),
            "`{}` matched through a stop word",
            kind.name
        );
    }
    assert!(
        once_analysis::search_kinds(&kinds, "and the for").len() == kinds.len(),
        "only stop words lists everything"
    );
}

#[test]
fn an_empty_query_lists_everything_and_nonsense_lists_nothing() {
    let kinds = kinds();
    assert_eq!(once_analysis::search_kinds(&kinds, "").len(), kinds.len());
    assert!(kinds.len() >= 20, "the catalog has {} kinds", kinds.len());
    assert!(once_analysis::search_kinds(&kinds, "zzyzx quux").is_empty());
}
