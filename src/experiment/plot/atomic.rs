//! Whole-or-nothing file output: write beside the target under a hidden temporary name, then
//! rename over it. A reader never sees half a figure, and a failed render leaves nothing behind.

use std::ffi::OsString;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::PlotError;

/// Distinguishes temporary names of concurrent writers within one process.
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A temporary file beside its final path; deleted on drop unless it was committed.
pub struct TempFile {
    temp: PathBuf,
    target: PathBuf,
    committed: bool,
}

impl TempFile {
    /// Reserves a temporary name in `target`'s directory. The name keeps `target`'s extension
    /// last, because the PNG encoder chooses the format from the extension.
    pub fn beside(target: &Path) -> Self {
        let dir = target.parent().unwrap_or_else(|| Path::new(""));
        let name = target
            .file_name()
            .map_or_else(|| OsString::from("plot"), |n| n.to_os_string());
        let ext = target.extension().map(|e| e.to_os_string());
        let mut temp_name = OsString::from(".");
        temp_name.push(&name);
        temp_name.push(format!(
            ".tmp-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        if let Some(ext) = ext {
            temp_name.push(".");
            temp_name.push(ext);
        }
        TempFile {
            temp: dir.join(temp_name),
            target: target.to_path_buf(),
            committed: false,
        }
    }

    /// Where to write.
    pub fn path(&self) -> &Path {
        &self.temp
    }

    /// Writes `bytes` to the temporary file and flushes them to disk.
    pub fn write_all(&self, bytes: &[u8]) -> Result<(), PlotError> {
        let io = |source| PlotError::Io {
            path: self.temp.clone(),
            source,
        };
        let mut f = fs::File::create(&self.temp).map_err(io)?;
        f.write_all(bytes).map_err(io)?;
        f.sync_all().map_err(io)
    }

    /// Checks that something non-empty was written (a renderer may report success without
    /// producing output if the backend swallowed an error).
    pub fn check_non_empty(&self) -> Result<(), PlotError> {
        match fs::metadata(&self.temp) {
            Ok(m) if m.len() > 0 => Ok(()),
            Ok(_) => Err(PlotError::Render(format!(
                "renderer wrote an empty file for {}",
                self.target.display()
            ))),
            Err(source) => Err(PlotError::Io {
                path: self.temp.clone(),
                source,
            }),
        }
    }

    /// Renames the temporary file onto the target.
    pub fn commit(mut self) -> Result<PathBuf, PlotError> {
        fs::rename(&self.temp, &self.target).map_err(|source| PlotError::Io {
            path: self.target.clone(),
            source,
        })?;
        self.committed = true;
        Ok(self.target.clone())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.committed {
            // Best effort: the file may never have been created.
            let _ = fs::remove_file(&self.temp);
        }
    }
}
