//! The built-in prelude: `prelude/*.star` and the starter trees under `prelude/examples/`,
//! embedded at build time (see `build.rs`). The kinds they declare come from the
//! checked-in catalog ([`crate::catalog`]) when it matches the embedded files, and are
//! evaluated once per process otherwise.

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use once_model::{KindOrigin, KindSchema};

use crate::EvalLimits;
use crate::values::DeclarationContext;

include!(concat!(env!("OUT_DIR"), "/prelude_files.rs"));

/// The built-in kinds: the checked-in catalog's, or evaluated from the embedded prelude
/// when the catalog is stale or unreadable. Deterministic; sorted by kind name. `Err`
/// only on a bug in the prelude (a test guarantees `Ok`). Shared, so that a workspace's
/// catalog holds them without copying.
pub fn prelude_kinds() -> &'static Result<Vec<Arc<KindSchema>>, String> {
    static KINDS: OnceLock<Result<Vec<Arc<KindSchema>>, String>> = OnceLock::new();
    KINDS.get_or_init(|| {
        crate::catalog::load()
            .map_or_else(evaluate_prelude, Ok)
            .map(|kinds| kinds.into_iter().map(Arc::new).collect())
    })
}

/// The text of the kind catalog file (`src/prelude_catalog.txt`) for the embedded
/// prelude, from evaluating it (never from the checked-in catalog); for codegen.
pub fn generated_prelude_catalog() -> Result<String, String> {
    evaluate_prelude().map(|kinds| crate::catalog::encode_prelude_catalog(&kinds))
}

/// The contents of one embedded prelude file, by path relative to `prelude/`
/// (`rust.star`, `examples/rust_binary/minimal/once.toml`, …).
pub fn prelude_file(path: &str) -> Option<&'static [u8]> {
    PRELUDE_FILES
        .iter()
        .find(|(p, _)| *p == path)
        .map(|(_, contents)| *contents)
}

/// Every embedded prelude file, for `example(files = "dir")`.
pub(crate) fn embedded_files() -> crate::values::EmbeddedFiles {
    PRELUDE_FILES
}

/// The top-level `.star` files of the prelude, sorted by path.
pub(crate) fn prelude_modules() -> impl Iterator<Item = (&'static str, &'static [u8])> {
    PRELUDE_FILES
        .iter()
        .filter(|(path, _)| !path.contains('/') && path.ends_with(".star"))
        .copied()
}

pub(crate) fn evaluate_prelude() -> Result<Vec<KindSchema>, String> {
    let mut kinds = Vec::new();
    let mut errors = Vec::new();
    // The prelude is trusted and evaluated once per process: no deadline, so a loaded
    // machine cannot make a built-in kind disappear.
    let prelude_limits = EvalLimits {
        deadline: std::time::Duration::MAX,
        ..EvalLimits::default()
    };
    for (path, contents) in prelude_modules() {
        let Ok(source) = std::str::from_utf8(contents) else {
            errors.push(format!("prelude/{path}: not UTF-8"));
            continue;
        };
        let mut ctx = DeclarationContext::new(KindOrigin::Prelude(path.to_owned()));
        ctx.strict = true;
        ctx.embedded = Some(PRELUDE_FILES);
        let display_path = format!("prelude/{path}");
        let (declared, error) = crate::eval::run(&display_path, source, &prelude_limits, ctx);
        if let Some(d) = error {
            errors.push(format!("{}:{}:{}: {}", d.path, d.line, d.column, d.message));
        }
        kinds.extend(declared);
    }
    let mut seen = HashSet::new();
    for kind in &kinds {
        if !seen.insert(kind.name.as_str()) {
            errors.push(format!(
                "prelude: kind `{}` is declared in more than one file",
                kind.name
            ));
        }
    }
    if !errors.is_empty() {
        return Err(errors.join("\n"));
    }
    kinds.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(kinds)
}
