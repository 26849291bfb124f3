//! A run's output files written as one: `run.json` and `trajectory.csv` of one run are never
//! found beside each other's counterparts from another run.
//!
//! Writers of one directory take turns: each holds an exclusive lock (`flock`) of the
//! directory itself while it writes, so no lock file is left behind. A directory that does
//! not exist yet is written whole in a fresh hidden directory beside it and renamed into
//! place. A directory holding nothing but a run's files is replaced the same way, by
//! exchanging the two directories in one rename (Linux `renameat2`, `RENAME_EXCHANGE`): a
//! reader sees the old files or the new ones, never a mix. A directory that also holds other
//! files (the user's) is written in place: every file is written whole to its temporary file
//! before any is renamed over its old version, so a full disk or a kill while writing leaves
//! the old pair, and a reader that opens the files by their names can meet a mixed pair
//! between the two renames. Two names in one directory cannot be replaced in one step, so
//! that window is closed for readers that take part: [`read_together`] holds a shared lock of
//! the directory while it reads (every writer holds the exclusive one from before its first
//! rename or exchange to after its last), and always sees one run's files.
//!
//! Every temporary file is locked by its writer while it lives, so the temporary files of an
//! interrupted writer (killed, its lock gone) are told from a live writer's and removed by
//! the next write of the same file.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::atomic::{TEMP_MARKER, create_temp_beside};

/// The files `names` of the run directory `dir`, read as one run's: under a shared lock of
/// the directory (see the module's doc), taken on whatever directory is found at `dir` once
/// the lock is held. Each file must be a regular file (not a link) of at most `cap` bytes.
pub fn read_together(dir: &Path, names: &[&str], cap: u64) -> std::io::Result<Vec<Vec<u8>>> {
    use crate::input::{InputError, Links, read_file};
    let _lock = loop {
        let f = fs::File::open(dir)?;
        f.lock_shared()?;
        if same_file(&f.metadata()?, &fs::metadata(dir)?) {
            break f;
        }
    };
    names
        .iter()
        .map(|name| {
            read_file(&dir.join(name), Links::Refuse, cap).map_err(|e| {
                let kind = match &e {
                    InputError::Io { source, .. } => source.kind(),
                    _ => std::io::ErrorKind::InvalidData,
                };
                std::io::Error::new(kind, e.to_string())
            })
        })
        .collect()
}

/// Why `--out` cannot be used.
pub fn check_out_dir(dir: &Path) -> std::io::Result<()> {
    match fs::metadata(dir) {
        Ok(m) if !m.is_dir() => Err(std::io::Error::new(
            std::io::ErrorKind::NotADirectory,
            format!(
                "`{}` exists and is not a directory (--out must name a directory)",
                dir.display()
            ),
        )),
        _ => Ok(()),
    }
}

/// Why `--out` cannot be written, found before a run instead of after all its work:
/// [`check_out_dir`], then every part of the path that exists must be a directory, and the
/// nearest one that exists must take a new file (a hidden probe, created and removed at
/// once: the same kind of file every write makes there first).
pub fn check_out_writable(dir: &Path) -> std::io::Result<()> {
    check_out_dir(dir)?;
    let shown = dir.display();
    let mut at = dir.to_path_buf();
    loop {
        match fs::metadata(&at) {
            Ok(m) if m.is_dir() => break,
            Ok(_) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotADirectory,
                    format!(
                        "`{}` is not a directory, so `{shown}` cannot be made (--out must name a directory)",
                        at.display()
                    ),
                ));
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                if !at.pop() || at.as_os_str().is_empty() {
                    at = PathBuf::from(".");
                }
            }
            Err(e) => {
                return Err(std::io::Error::new(
                    e.kind(),
                    format!("cannot use `{shown}` as --out: {e}"),
                ));
            }
        }
    }
    match create_temp_beside(&at.join("out")) {
        Ok((probe, _)) => {
            let _ = fs::remove_file(probe);
            Ok(())
        }
        Err(e) => Err(std::io::Error::new(
            e.kind(),
            format!(
                "cannot write into `{}` (for --out `{shown}`): {e}",
                at.display()
            ),
        )),
    }
}

/// Writes `files` (name, bytes) into `dir` as one (see the module's doc); returns their
/// paths.
pub fn write_together(dir: &Path, files: &[(&str, &[u8])]) -> std::io::Result<Vec<PathBuf>> {
    check_out_dir(dir)?;
    let paths: Vec<PathBuf> = files.iter().map(|(name, _)| dir.join(name)).collect();
    if !dir.exists() && write_new_dir(dir, files)? {
        return Ok(paths);
    }
    let _lock = lock_dir(dir)?;
    for path in &paths {
        remove_dead_temps(path)?;
    }
    remove_dead_staging(dir, files);
    if holds_only(dir, files)? && exchange_dir(dir, files)? {
        return Ok(paths);
    }
    write_in_place(&paths, files)?;
    Ok(paths)
}

/// Writes every file to a temporary file beside it, then renames them all into place.
fn write_in_place(paths: &[PathBuf], files: &[(&str, &[u8])]) -> std::io::Result<()> {
    let mut temps = Vec::with_capacity(files.len());
    // Every file is written whole before any is renamed into place; the handles (and the
    // temporary files' locks) live until the renames are done.
    let mut handles = Vec::with_capacity(files.len());
    let result = (|| {
        for ((_, bytes), path) in files.iter().zip(paths) {
            let (tmp, mut f) = create_temp_beside(path)?;
            temps.push((tmp, path));
            f.write_all(bytes)?;
            f.sync_all()?;
            handles.push(f);
        }
        for (tmp, path) in &temps {
            fs::rename(tmp, path)?;
        }
        Ok(())
    })();
    drop(handles);
    if result.is_err() {
        for (tmp, _) in &temps {
            let _ = fs::remove_file(tmp);
        }
    }
    result
}

/// An exclusive lock of the directory `dir` itself, held while the returned handle lives:
/// taken on whatever directory is found at `dir` once the lock is held (another writer may
/// have exchanged it meanwhile).
fn lock_dir(dir: &Path) -> std::io::Result<fs::File> {
    fs::create_dir_all(dir)?;
    loop {
        let f = fs::File::open(dir)?;
        f.lock()?;
        if same_file(&f.metadata()?, &fs::metadata(dir)?) {
            return Ok(f);
        }
    }
}

#[cfg(unix)]
fn same_file(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(_: &fs::Metadata, _: &fs::Metadata) -> bool {
    true
}

/// Whether `dir` holds nothing but regular files named in `files` (a run's own directory).
fn holds_only(dir: &Path, files: &[(&str, &[u8])]) -> std::io::Result<bool> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let ours = files.iter().any(|(n, _)| name.to_str() == Some(*n));
        if !ours || !entry.file_type()?.is_file() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A new hidden directory beside `dir` holding `files`, each written whole and synced, and
/// its lock (held while it is staged, so that a later writer can tell an interrupted
/// writer's staging directory from a live one's).
fn staged(dir: &Path, files: &[(&str, &[u8])]) -> std::io::Result<(PathBuf, fs::File)> {
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&parent)?;
    let (staging, _) = create_temp_beside(dir)?;
    // `create_temp_beside` reserved the name with a file; the staging place is a directory.
    fs::remove_file(&staging)?;
    fs::create_dir(&staging)?;
    let written = (|| {
        let lock = fs::File::open(&staging)?;
        lock.try_lock().map_err(std::io::Error::other)?;
        for (name, bytes) in files {
            let mut f = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(staging.join(name))?;
            f.write_all(bytes)?;
            f.sync_all()?;
        }
        Ok(lock)
    })();
    match written {
        Ok(lock) => Ok((staging, lock)),
        Err(e) => {
            remove_staged(&staging, files);
            Err(e)
        }
    }
}

/// Removes a staging directory and the files of `files` in it (nothing else).
fn remove_staged(staging: &Path, files: &[(&str, &[u8])]) {
    for (name, _) in files {
        let _ = fs::remove_file(staging.join(name));
    }
    let _ = fs::remove_dir(staging);
}

/// Writes `files` into a new hidden directory beside `dir` and renames it to `dir`. `false`
/// when `dir` came into being meanwhile (another run made it): then nothing was written.
fn write_new_dir(dir: &Path, files: &[(&str, &[u8])]) -> std::io::Result<bool> {
    let (staging, _staging_lock) = staged(dir, files)?;
    match fs::rename(&staging, dir) {
        Ok(()) => Ok(true),
        Err(e) => {
            remove_staged(&staging, files);
            if dir.is_dir() { Ok(false) } else { Err(e) }
        }
    }
}

/// Replaces the directory `dir` (holding only a run's files) by a new one holding `files`, in
/// one exchange of the two; `false` where the system cannot exchange directories (then
/// nothing was changed).
#[cfg(target_os = "linux")]
fn exchange_dir(dir: &Path, files: &[(&str, &[u8])]) -> std::io::Result<bool> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    // Only a directory named by a name of its own (not `.` or `..`), not a link to one (the
    // link would be exchanged, not the directory), and not this process's working directory.
    let named = matches!(
        dir.components().next_back(),
        Some(std::path::Component::Normal(_))
    );
    let real_dir = fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir());
    let cwd = fs::metadata(".")
        .and_then(|here| Ok(same_file(&here, &fs::metadata(dir)?)))
        .unwrap_or(true);
    if !named || !real_dir || cwd {
        return Ok(false);
    }
    let c = |p: &Path| CString::new(p.as_os_str().as_bytes()).map_err(std::io::Error::other);
    let to = c(dir)?;
    // Where the parent cannot take a staging directory (not writable, full), the files are
    // written in place instead (which fails, leaving the old pair, if the disk is full).
    let Ok((staging, _staging_lock)) = staged(dir, files) else {
        return Ok(false);
    };
    // The new directory keeps the old one's permissions (a private one stays private).
    if let Err(e) = fs::metadata(dir).and_then(|m| fs::set_permissions(&staging, m.permissions())) {
        remove_staged(&staging, files);
        return Err(e);
    }
    let from = c(&staging)?;
    // SAFETY: both paths are NUL-terminated strings that outlive the call.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        remove_staged(&staging, files);
        return match e.raw_os_error() {
            // No such rename on this kernel or file system: write in place instead.
            Some(libc::ENOSYS | libc::EINVAL | libc::EPERM | libc::EXDEV) => Ok(false),
            _ => Err(e),
        };
    }
    // The staging name now holds the old directory: its run files go; anything else someone
    // put there meanwhile goes back into the new directory, never deleted.
    if !fs::symlink_metadata(&staging).is_ok_and(|m| m.is_dir()) {
        return Ok(true);
    }
    for entry in fs::read_dir(&staging)?.flatten() {
        let name = entry.file_name();
        if files.iter().any(|(n, _)| name.to_str() == Some(*n)) {
            let _ = fs::remove_file(entry.path());
        } else if !dir.join(&name).exists() {
            let _ = fs::rename(entry.path(), dir.join(&name));
        }
    }
    let _ = fs::remove_dir(&staging);
    Ok(true)
}

#[cfg(not(target_os = "linux"))]
fn exchange_dir(_: &Path, _: &[(&str, &[u8])]) -> std::io::Result<bool> {
    Ok(false)
}

/// Removes the staging directories beside `dir` left by interrupted writers (unlocked ones),
/// with the files of `files` in them; one holding anything else is left alone.
fn remove_dead_staging(dir: &Path, files: &[(&str, &[u8])]) {
    let (Some(name), Some(parent)) = (dir.file_name(), dir.parent()) else {
        return;
    };
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    let prefix = format!(".{}{TEMP_MARKER}", name.to_string_lossy());
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if !is_dir || !entry.file_name().to_string_lossy().starts_with(&prefix) {
            continue;
        }
        let path = entry.path();
        if fs::File::open(&path).is_ok_and(|f| f.try_lock().is_ok()) {
            remove_staged(&path, files);
        }
    }
}

/// Removes the temporary files of `target` left by writers that were interrupted: those whose
/// lock nobody holds. A live writer's temporary file is left alone.
pub fn remove_dead_temps(target: &Path) -> std::io::Result<usize> {
    let Some(name) = target.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return Ok(0);
    };
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let prefix = format!(".{name}{TEMP_MARKER}");
    let mut removed = 0;
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if !entry.file_name().to_string_lossy().starts_with(&prefix)
            || !entry.file_type()?.is_file()
        {
            continue;
        }
        let path = entry.path();
        let Ok(f) = crate::input::open_regular(&path, crate::input::Links::Refuse) else {
            continue;
        };
        if f.try_lock().is_ok() {
            fs::remove_file(&path)?;
            removed += 1;
        }
    }
    Ok(removed)
}
