//! The built-in prelude: it evaluates, every kind is documented and has runnable examples.

use crate::prelude_kinds;

fn kinds() -> Vec<once_model::KindSchema> {
    match prelude_kinds() {
        Ok(kinds) => kinds
            .iter()
            .map(|kind| once_model::KindSchema::clone(kind))
            .collect(),
        Err(e) => panic!("the prelude does not evaluate:\n{e}"),
    }
}

/// One snapshot file per prelude file (`snapshots/<file>.txt`), so that families can
/// change independently. `UPDATE_EXPECT=1` rewrites them.
#[test]
fn prelude_snapshot() {
    let kinds = kinds();
    let mut files: Vec<String> = kinds
        .iter()
        .map(|k| match &k.origin {
            once_model::KindOrigin::Prelude(file) => file.clone(),
            once_model::KindOrigin::Module(path) => path.clone(),
        })
        .collect();
    files.sort();
    files.dedup();
    for file in files {
        let rendered: String = kinds
            .iter()
            .filter(|k| matches!(&k.origin, once_model::KindOrigin::Prelude(f) if *f == file))
            .map(crate::tests::render_kind)
            .collect();
        let stem = file.trim_end_matches(".star");
        expect_test::expect_file![format!("snapshots/{stem}.txt")].assert_eq(&rendered);
    }
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
