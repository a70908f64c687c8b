//! The built-in prelude: it evaluates, every kind is documented and has runnable examples.

use expect_test::expect;

use crate::prelude_kinds;

fn kinds() -> Vec<once_model::KindSchema> {
    match prelude_kinds() {
        Ok(kinds) => kinds,
        Err(e) => panic!("the prelude does not evaluate:\n{e}"),
    }
}

#[test]
fn prelude_snapshot() {
    let rendered: String = kinds().iter().map(crate::tests::render_kind).collect();
    expect![[r#"
        kind command (prelude generic.star)
          attr cmd: string [required]
          attr outputs: list[path] [required]
          attr inputs: list[path] [default=[]]
          attr env: dict[string] [default={}]
          dep deps <- files [0..]
          dep tools <- executable [0..]
          provides files
          capability build -> default
          tool sh
          see Bazel genrule 0d3b76b3e6e1
          see Buck2 genrule a5b424242303
          example command-generate-file: greeting/greeting.txt.in, greeting/once.toml, once.toml
        kind filegroup (prelude generic.star)
          dep deps <- files [0..]
          provides files
          capability build -> default
          see Bazel filegroup 869987250bf8
          see Buck2 filegroup 618d27a5b702
          example filegroup-minimal: fixtures/once.toml, fixtures/settings.json, fixtures/users.json, once.toml
        kind rust_binary (prelude rust.star)
          attr crate_name: string [fixed]
          attr crate_root: path [fixed]
          attr edition: string [fixed, default="2021", values=2015|2018|2021|2024]
          attr features: list[string] [default=[]]
          attr rustc_flags: list[string] [default=[]]
          attr rustc_env: dict[string] [default={}]
          attr args: list[string] [default=[]]
          attr env: dict[string] [default={}]
          dep deps <- rust_crate [0..]
          dep data <- files [0..]
          provides executable
          capability build -> default
          capability run -> default (requires default)
          tool rustc
          see Bazel rust_binary 94c8ef93bc6b
          see Buck2 rust_binary 63f6e981b0fe
          see Cargo [[bin]] 92011024c0d4
          example rust-binary-minimal: Cargo.toml, once.toml, src/main.rs
          example rust-binary-with-library: Cargo.toml, app/Cargo.toml, app/once.toml, app/src/main.rs, lib/greeting/Cargo.toml, lib/greeting/once.toml, lib/greeting/src/lib.rs, once.toml
        kind rust_library (prelude rust.star)
          attr crate_name: string [fixed]
          attr crate_root: path [fixed]
          attr edition: string [fixed, default="2021", values=2015|2018|2021|2024]
          attr features: list[string] [default=[]]
          attr rustc_flags: list[string] [default=[]]
          attr rustc_env: dict[string] [default={}]
          dep deps <- rust_crate [0..]
          provides rust_crate
          capability build -> default
          tool rustc
          see Bazel rust_library 27f2845125af
          see Buck2 rust_library 273c4b272920
          see Cargo [lib] 4ebb1442c2e4
          example rust-library-minimal: crates/greeting/Cargo.toml, crates/greeting/once.toml, crates/greeting/src/lib.rs, once.toml
        kind rust_test (prelude rust.star)
          attr crate_name: string [fixed]
          attr crate_root: path [fixed]
          attr edition: string [fixed, default="2021", values=2015|2018|2021|2024]
          attr features: list[string] [default=[]]
          attr rustc_flags: list[string] [default=[]]
          attr rustc_env: dict[string] [default={}]
          attr args: list[string] [default=[]]
          attr env: dict[string] [default={}]
          attr timeout_seconds: int [fixed, default=300]
          dep deps <- rust_crate [0..]
          dep crate_under_test <- rust_crate [0..1]
          dep data <- files [0..]
          capability build -> default
          capability test -> test_results (requires default) (runner libtest)
          tool rustc
          see Bazel rust_test 713d81e9dc10
          see Buck2 rust_test fa0229475295
          see Cargo cargo test a77a9ecdb25a
          example rust-test-unit: calc/Cargo.toml, calc/once.toml, calc/src/lib.rs, once.toml
        kind script (prelude generic.star)
          attr script_path: path [required, fixed]
          attr script_runtime: string [required, fixed]
          attr args: list[string] [default=[]]
          attr env: dict[string] [default={}]
          dep deps <- files [0..]
          provides executable
          capability run -> default
          see Buck2 command_alias 43862240f58d
          see npm scripts 4aa7a4e45ebd
          example script-minimal: once.toml, tools/cleanup.sh, tools/once.toml
        kind sh_binary (prelude sh.star)
          attr main: path
          attr args: list[string] [default=[]]
          attr env: dict[string] [default={}]
          dep deps <- files, executable [0..]
          provides executable, files
          capability build -> default
          capability run -> default (requires default)
          tool bash
          see Bazel sh_binary 224a00d0c74d
          see Buck2 sh_binary 19f7b8e717a1
          example sh-binary-minimal: once.toml, scripts/greet.sh, scripts/once.toml
        kind sh_test (prelude sh.star)
          attr main: path
          attr args: list[string] [default=[]]
          attr env: dict[string] [default={}]
          attr timeout_seconds: int [fixed, default=300]
          dep deps <- files, executable [0..]
          capability build -> default
          capability test -> test_results (requires default) (runner sh)
          tool bash
          see Bazel sh_test 9275a854e86e
          see Buck2 sh_test 5bb3a1b79f15
          example sh-test-minimal: once.toml, scripts/greet.sh, scripts/greet_test.sh, scripts/once.toml
    "#]].assert_eq(&rendered);
}

#[test]
fn prelude_is_sorted_and_deterministic() {
    let first = kinds();
    let names: Vec<&str> = first.iter().map(|k| k.name.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(names, sorted);
    assert_eq!(first, kinds());
}

#[test]
fn everything_is_documented() {
    for kind in kinds() {
        let name = &kind.name;
        assert!(!kind.docs.trim().is_empty(), "kind {name} has no docs");
        for attr in &kind.attrs {
            assert!(
                !attr.docs.trim().is_empty(),
                "{name}.{} has no docs",
                attr.name
            );
        }
        for role in &kind.dependencies {
            assert!(
                !role.docs.trim().is_empty(),
                "{name} role {} has no docs",
                role.name
            );
        }
        for cap in &kind.capabilities {
            assert!(
                !cap.docs.trim().is_empty(),
                "{name} capability {} has no docs",
                cap.name
            );
        }
        for tool in &kind.tools {
            assert!(
                !tool.docs.trim().is_empty(),
                "{name} tool {} has no docs",
                tool.name
            );
        }
        assert!(
            !kind.source_references.is_empty(),
            "kind {name} has no source references"
        );
        for reference in &kind.source_references {
            assert_eq!(
                reference.content_digest,
                crate::helpers::content_digest(
                    &reference.system,
                    &reference.symbol,
                    &reference.url
                )
            );
            assert_eq!(reference.content_digest.len(), 64);
        }
    }
}

#[test]
fn every_kind_has_complete_examples() {
    for kind in kinds() {
        assert!(
            !kind.examples.is_empty(),
            "kind {} has no example",
            kind.name
        );
        for example in &kind.examples {
            let slug = &example.slug;
            assert!(
                example.files.iter().any(|f| f.path == "once.toml"),
                "{slug}: no root once.toml"
            );
            let paths: Vec<&str> = example.files.iter().map(|f| f.path.as_str()).collect();
            let mut sorted = paths.clone();
            sorted.sort_unstable();
            assert_eq!(paths, sorted, "{slug}: files not sorted");
            for file in &example.files {
                assert!(!file.contents.is_empty(), "{slug}/{} is empty", file.path);
                assert!(
                    std::str::from_utf8(&file.contents).is_ok(),
                    "{slug}/{} is not UTF-8",
                    file.path
                );
            }
            // The example declares at least one target of the kind it illustrates.
            let declares_kind = example.files.iter().any(|f| {
                f.path.ends_with("once.toml")
                    && String::from_utf8_lossy(&f.contents)
                        .contains(&format!("kind = \"{}\"", kind.name))
            });
            assert!(declares_kind, "{slug}: no target of kind {}", kind.name);
        }
    }
}

#[test]
fn example_manifests_use_declared_attributes() {
    // A light check without a TOML parser: every `key = …` line under `[target.attrs]`
    // names an attribute of the target's kind.
    let kinds = kinds();
    for kind in &kinds {
        for example in &kind.examples {
            for file in example
                .files
                .iter()
                .filter(|f| f.path.ends_with("once.toml"))
            {
                let text = String::from_utf8_lossy(&file.contents);
                let mut current_kind: Option<&once_model::KindSchema> = None;
                let mut in_attrs = false;
                for line in text.lines().map(str::trim) {
                    if line == "[[target]]" {
                        in_attrs = false;
                        current_kind = None;
                    } else if line == "[target.attrs]" {
                        in_attrs = true;
                    } else if line.starts_with('[') {
                        in_attrs = false;
                    } else if let Some((key, value)) = line.split_once('=') {
                        let key = key.trim();
                        if key == "kind" && !in_attrs {
                            let name = value.trim().trim_matches('"');
                            current_kind = kinds.iter().find(|k| k.name == name);
                            assert!(
                                current_kind.is_some(),
                                "{}: unknown kind {name}",
                                example.slug
                            );
                        } else if in_attrs {
                            let kind = current_kind.expect("attrs after kind");
                            assert!(
                                kind.attr(key).is_some(),
                                "{}/{}: `{key}` is not an attribute of {}",
                                example.slug,
                                file.path,
                                kind.name
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn prelude_files_are_embedded() {
    assert!(crate::prelude_file("rust.star").is_some());
    assert!(crate::prelude_file("examples/rust_binary/rust-binary-minimal/src/main.rs").is_some());
    assert!(crate::prelude_file("nope.star").is_none());
}
