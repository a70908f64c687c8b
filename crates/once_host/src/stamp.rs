//! File stamps: what a `stat` says of a file, compared to tell whether it changed.

/// What a path names, without following a final symbolic link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EntryKind {
    File,
    Directory,
    Symlink,
    Other,
}

impl EntryKind {
    pub fn of_file_type(file_type: std::fs::FileType) -> EntryKind {
        if file_type.is_symlink() {
            EntryKind::Symlink
        } else if file_type.is_dir() {
            EntryKind::Directory
        } else if file_type.is_file() {
            EntryKind::File
        } else {
            EntryKind::Other
        }
    }
}

/// A file's metadata fingerprint: two stamps differ whenever the file was replaced,
/// written, truncated, or changed kind or mode (the inputs of the change layer's rescan
/// and of the digest index). Timestamps are in nanoseconds since the Unix epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileStamp {
    pub kind: EntryKind,
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
    pub inode: u64,
    pub mode: u32,
}

impl FileStamp {
    /// The stamp of a `stat` (what [`FileStamp::of_metadata`] makes of the same file's
    /// metadata), for code that stats through directory handles.
    #[cfg(unix)]
    pub fn of_stat(stat: &rustix::fs::Stat) -> FileStamp {
        let kind = match rustix::fs::FileType::from_raw_mode(stat.st_mode) {
            rustix::fs::FileType::RegularFile => EntryKind::File,
            rustix::fs::FileType::Directory => EntryKind::Directory,
            rustix::fs::FileType::Symlink => EntryKind::Symlink,
            _ => EntryKind::Other,
        };
        FileStamp {
            kind,
            size: stat.st_size.max(0) as u64,
            mtime_ns: i128::from(stat.st_mtime) * 1_000_000_000 + i128::from(stat.st_mtime_nsec),
            ctime_ns: i128::from(stat.st_ctime) * 1_000_000_000 + i128::from(stat.st_ctime_nsec),
            inode: stat.st_ino,
            mode: stat.st_mode,
        }
    }

    /// The stamp of `std::fs` metadata (of a followed path or an open handle).
    pub fn of_metadata(metadata: &std::fs::Metadata) -> FileStamp {
        let kind = EntryKind::of_file_type(metadata.file_type());
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt as _;
            FileStamp {
                kind,
                size: metadata.size(),
                mtime_ns: i128::from(metadata.mtime()) * 1_000_000_000
                    + i128::from(metadata.mtime_nsec()),
                ctime_ns: i128::from(metadata.ctime()) * 1_000_000_000
                    + i128::from(metadata.ctime_nsec()),
                inode: metadata.ino(),
                mode: metadata.mode(),
            }
        }
        #[cfg(not(unix))]
        {
            let nanos = |time: io::Result<std::time::SystemTime>| {
                time.ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos() as i128)
            };
            FileStamp {
                kind,
                size: metadata.len(),
                mtime_ns: nanos(metadata.modified()),
                ctime_ns: nanos(metadata.created()),
                inode: 0,
                mode: u32::from(metadata.permissions().readonly()),
            }
        }
    }
}
