//! Whole-or-nothing file output: write beside the target under a hidden, unpredictable
//! temporary name (created new, so a planted symbolic link is never followed), then rename
//! over it. A reader never sees half a figure, and a failed render leaves nothing behind.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::PlotError;
use dsgd::experiment::atomic::create_temp_beside;

/// A temporary file beside its final path; deleted on drop unless it was committed.
pub struct TempFile {
    temp: PathBuf,
    target: PathBuf,
    committed: bool,
}

impl TempFile {
    /// Creates an empty temporary file in `target`'s directory. Its name keeps `target`'s
    /// extension last, because the PNG encoder chooses the format from the extension.
    pub fn beside(target: &Path) -> Result<Self, PlotError> {
        let (temp, _file) = create_temp_beside(target).map_err(|source| PlotError::Io {
            path: target.to_path_buf(),
            source,
        })?;
        Ok(TempFile {
            temp,
            target: target.to_path_buf(),
            committed: false,
        })
    }

    /// Where to write.
    pub fn path(&self) -> &Path {
        &self.temp
    }

    /// Writes `bytes` to the temporary file and flushes them to disk.
    pub fn write_all(&self, bytes: &[u8]) -> Result<(), PlotError> {
        let io = |source| PlotError::Io {
            path: self.target.clone(),
            source,
        };
        // The file was created new by `beside`; truncate it, never create or follow a link.
        let mut f = fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&self.temp)
            .map_err(io)?;
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
                path: self.target.clone(),
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
