//! Files written whole or not at all: a new temporary file beside the target, renamed into
//! place, so a reader never sees a half-written file; and the cleaning of an interrupted
//! writer's temporary files.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `bytes` to a temporary file beside `path` and renames it into place, so a reader
/// never sees a half-written file. The temporary file is new ([`create_temp_beside`]): a
/// symbolic link planted in a shared output directory is never written through.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let (tmp, mut f) = create_temp_beside(path)?;
    let result = (|| {
        f.write_all(bytes)?;
        f.sync_all()?;
        // Renamed while open: the temporary file's lock marks it live until it is in place.
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The marker in the name of every temporary file of [`create_temp_beside`].
pub const TEMP_MARKER: &str = ".tmp-";

/// Creates a new, empty file beside `target` named `.NAME.tmp-RANDOM[.EXT]` (the extension
/// last, because some encoders choose the format from it). The name cannot be predicted and
/// the file is opened with `create_new`, which fails rather than follow a symbolic link or
/// reuse a file someone else put there.
pub fn create_temp_beside(target: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    use std::hash::{BuildHasher, Hasher};
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".to_string());
    let ext = target
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    let mut last = None;
    for attempt in 0u64..16 {
        // `RandomState` is keyed from the operating system's random source.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(attempt);
        h.write_u32(std::process::id());
        let tmp = target.with_file_name(format!(".{name}{TEMP_MARKER}{:016x}{ext}", h.finish()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(f) => {
                // Locked while its writer lives, so that a later writer can tell an
                // interrupted writer's leftover (unlocked) from a live one's.
                f.try_lock().map_err(std::io::Error::other)?;
                return Ok((tmp, f));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free temporary name")))
}

/// Deletes the temporary files an interrupted writer left under `dir` (recursively). Call
/// it only while no other writer uses `dir` (`reproduce` holds its lock).
pub fn remove_leftover_temps(dir: &Path) -> std::io::Result<usize> {
    let mut removed = 0;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if kind.is_dir() {
                pending.push(entry.path());
            } else if name.starts_with('.') && name.contains(TEMP_MARKER) {
                std::fs::remove_file(entry.path())?;
                removed += 1;
            }
        }
    }
    Ok(removed)
}
