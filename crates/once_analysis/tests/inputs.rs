//! The inputs of every target at once (`once query inputs`) are what asking target by
//! target answers: the same files, digests and input digests, in id order, on one thread
//! or several.

use std::sync::Arc;

use once_analysis::{AnalysisHost, TargetInputs};
use once_fixture::Fixture;

/// Targets sharing files, a glob, a path-typed attribute, a source that does not exist,
/// a target without sources, the root package and a package nested in another.
const WORKSPACE: &str = r#"
//- /once.toml
[workspace]

[[target]]
name = "Smoke"
kind = "sh_test"
srcs = ["smoke.sh"]

[target.attrs]
main = "main.sh"
//- /smoke.sh
echo smoke
//- /main.sh
echo main
//- /unread.txt
not an input
//- /lib/once.toml
[[target]]
name = "Lib"
kind = "rust_library"
srcs = ["src/**/*.rs", "missing.rs"]

[[target]]
name = "Alias"
kind = "rust_library"
srcs = ["src/lib.rs"]

[[target]]
name = "Bare"
kind = "rust_library"
//- /lib/src/lib.rs
pub mod a;
//- /lib/src/a/b.rs
pub fn b() {}
//- /lib/nested/once.toml
[[target]]
name = "Inner"
kind = "rust_library"
srcs = ["**/*.rs"]
//- /lib/nested/inner.rs
pub fn inner() {}
"#;

fn one_by_one(host: &AnalysisHost) -> Vec<(String, TargetInputs)> {
    let analysis = host.analysis();
    analysis
        .targets(None)
        .expect("not cancelled")
        .into_iter()
        .map(|target| {
            let inputs = analysis
                .target_inputs(&target.id)
                .expect("not cancelled")
                .expect("a listed target exists");
            (target.id, inputs)
        })
        .collect()
}

fn paths<'a>(all: &'a [(String, TargetInputs)], id: &str) -> Vec<&'a str> {
    all.iter()
        .find(|(found, _)| found == id)
        .map(|(_, inputs)| inputs.inputs.iter().map(|i| i.path.as_str()).collect())
        .unwrap_or_default()
}

#[test]
fn every_target_inputs_matches_asking_target_by_target() {
    let system = Fixture::parse(WORKSPACE).system();
    for threads in [1, 3] {
        let host = AnalysisHost::load(Arc::new(system.clone()), once_fixture::path(""));
        let all = host
            .analysis()
            .every_target_inputs(threads)
            .expect("not cancelled");
        let ids: Vec<&str> = all.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "Smoke",
                "lib/Alias",
                "lib/Bare",
                "lib/Lib",
                "lib/nested/Inner"
            ],
            "sorted by id"
        );
        assert_eq!(paths(&all, "Smoke"), ["main.sh", "once.toml", "smoke.sh"]);
        assert_eq!(
            paths(&all, "lib/Lib"),
            ["lib/once.toml", "lib/src/a/b.rs", "lib/src/lib.rs"],
            "a nested package's files are its own"
        );
        assert_eq!(paths(&all, "lib/Bare"), ["lib/once.toml"]);
        assert_eq!(
            paths(&all, "lib/nested/Inner"),
            ["lib/nested/inner.rs", "lib/nested/once.toml"]
        );
        assert!(
            all.iter()
                .flat_map(|(_, inputs)| &inputs.inputs)
                .all(|input| input.digest.as_ref().is_ok_and(|d| d.len() == 64)),
            "{all:?}"
        );
        // A fresh database answering target by target agrees on every file and digest.
        let fresh = AnalysisHost::load(Arc::new(system.clone()), once_fixture::path(""));
        assert_eq!(all, one_by_one(&fresh), "with {threads} threads");
    }
}
