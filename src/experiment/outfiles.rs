//! A run's output files written as one: `run.json` and `trajectory.csv` of one run are never
//! found beside each other's counterparts from another run.
//!
//! Into a directory that does not exist yet, the files are written in a fresh hidden
//! directory beside it and that directory is renamed into place: a reader sees all of them or
//! none. Into an existing directory (which may hold the user's other files), each file is
//! written whole to a temporary file first, all of them before any is renamed into place, and
//! the renames are made under an exclusive lock of the directory: two runs writing into one
//! directory at once leave one run's files, a full disk leaves the old ones, and a reader can
//! meet a mixed pair only in the moment between two renames.
//!
//! Every temporary file is locked by its writer while it lives, so the temporary files of an
//! interrupted writer (killed, its lock gone) are told from a live writer's and removed by
//! the next write of the same file.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::report::{TEMP_MARKER, create_temp_beside};

/// The lock file of a directory that runs write into (empty, never read).
pub const DIR_LOCK_FILE: &str = ".dsgd-out.lock";

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

/// Writes `files` (name, bytes) into `dir` as one (see the module's doc); returns their
/// paths.
pub fn write_together(dir: &Path, files: &[(&str, &[u8])]) -> std::io::Result<Vec<PathBuf>> {
    check_out_dir(dir)?;
    let paths: Vec<PathBuf> = files.iter().map(|(name, _)| dir.join(name)).collect();
    if !dir.exists() && write_new_dir(dir, files)? {
        return Ok(paths);
    }
    fs::create_dir_all(dir)?;
    let lock = open_dir_lock(dir)?;
    lock.lock()?;
    for path in &paths {
        remove_dead_temps(path)?;
    }
    let mut temps = Vec::with_capacity(files.len());
    // Every file is written whole before any is renamed into place; the handles (and the
    // temporary files' locks) live until the renames are done.
    let mut handles = Vec::with_capacity(files.len());
    let result = (|| {
        for ((_, bytes), path) in files.iter().zip(&paths) {
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
    drop(lock);
    result.map(|()| paths)
}

/// Writes `files` into a new hidden directory beside `dir` and renames it to `dir`. `false`
/// when `dir` came into being meanwhile (another run made it): then nothing was written.
fn write_new_dir(dir: &Path, files: &[(&str, &[u8])]) -> std::io::Result<bool> {
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&parent)?;
    let (staging, _) = create_temp_beside(dir)?;
    // `create_temp_beside` made a file; the staging place is a directory of that name.
    fs::remove_file(&staging)?;
    fs::create_dir(&staging)?;
    let result = (|| {
        for (name, bytes) in files {
            let mut f = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(staging.join(name))?;
            f.write_all(bytes)?;
            f.sync_all()?;
        }
        fs::rename(&staging, dir)
    })();
    match result {
        Ok(()) => Ok(true),
        Err(e) => {
            for (name, _) in files {
                let _ = fs::remove_file(staging.join(name));
            }
            let _ = fs::remove_dir(&staging);
            if dir.is_dir() { Ok(false) } else { Err(e) }
        }
    }
}

/// Opens (creating) the directory's lock file, never through a link.
fn open_dir_lock(dir: &Path) -> std::io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC);
    }
    let f = options.open(dir.join(DIR_LOCK_FILE))?;
    if !f.metadata()?.is_file() {
        return Err(std::io::Error::other(format!(
            "`{}` is not a regular file",
            dir.join(DIR_LOCK_FILE).display()
        )));
    }
    Ok(f)
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
