//! The kind catalog: every kind a target may use.
//!
//! Today that is the embedded Starlark prelude; project modules (`[modules] paths`) join
//! it in a later release.

use once_db::{Db, Workspace};
use once_model::KindSchema;

/// The kinds available to a workspace, sorted by name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct KindCatalog {
    pub kinds: Vec<KindSchema>,
    /// Set when the prelude itself failed to evaluate (a bug in `once`).
    pub prelude_error: Option<String>,
}

impl KindCatalog {
    pub fn get(&self, name: &str) -> Option<&KindSchema> {
        self.kinds
            .binary_search_by(|k| k.name.as_str().cmp(name))
            .ok()
            .map(|i| &self.kinds[i])
    }

    pub fn names(&self) -> impl Iterator<Item = &str> + Clone {
        self.kinds.iter().map(|k| k.name.as_str())
    }
}

/// The workspace's kind catalog.
#[salsa::tracked(returns(ref))]
pub fn kind_catalog(db: &dyn Db, workspace: Workspace) -> KindCatalog {
    let _ = workspace;
    let _ = db;
    match once_starlark::prelude_kinds() {
        Ok(mut kinds) => {
            kinds.sort_by(|a, b| a.name.cmp(&b.name));
            KindCatalog {
                kinds,
                prelude_error: None,
            }
        }
        Err(error) => KindCatalog {
            kinds: Vec::new(),
            prelude_error: Some(error),
        },
    }
}
