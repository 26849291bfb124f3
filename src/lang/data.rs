//! Data files: how the compiler finds them (a [`Resolver`], so that built-in models carry
//! their data inside the binary) and how a column of a CSV file becomes numbers.

use std::path::PathBuf;

/// Reads the files a model refers to, by the path written in the model.
pub trait Resolver {
    /// The text of the file at `path` (relative to the model), or why it cannot be read.
    fn read(&self, path: &str) -> Result<String, String>;
}

/// Files on disk, relative to the model's directory.
#[derive(Clone, Debug)]
pub struct FsResolver {
    pub base_dir: PathBuf,
}

impl Resolver for FsResolver {
    fn read(&self, path: &str) -> Result<String, String> {
        let full = self.base_dir.join(path);
        std::fs::read_to_string(&full).map_err(|e| format!("{} ({})", e, full.display()))
    }
}

/// Why a column could not be read.
pub(crate) struct DataError {
    pub message: String,
    pub expected: String,
    /// The file was read but has no such column (the error points at the column name).
    pub missing_column: bool,
}

/// The numbers in column `column` of the CSV file `path` (with a header row).
pub(crate) fn read_column(
    resolver: &dyn Resolver,
    path: &str,
    column: &str,
) -> Result<Vec<f64>, DataError> {
    let text = resolver.read(path).map_err(|e| DataError {
        message: format!("cannot read data file `{path}`: {e}"),
        expected: "a CSV file beside the model (the path is relative to the model file)"
            .to_string(),
        missing_column: false,
    })?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let bad = |message: String| DataError {
        message,
        expected: "a CSV file with a header row and numbers below it".to_string(),
        missing_column: false,
    };
    let headers = reader
        .headers()
        .map_err(|e| bad(format!("`{path}` is not a valid CSV file: {e}")))?
        .clone();
    let Some(col) = headers.iter().position(|h| h == column) else {
        let names: Vec<&str> = headers.iter().collect();
        return Err(DataError {
            message: format!("`{path}` has no column `{column}`"),
            expected: format!("one of its columns: {}", names.join(", ")),
            missing_column: true,
        });
    };
    let mut out = Vec::new();
    for (row, record) in reader.records().enumerate() {
        let record = record.map_err(|e| bad(format!("`{path}` is not a valid CSV file: {e}")))?;
        let field = record.get(col).unwrap_or("");
        let x: f64 = field.parse().map_err(|_| {
            bad(format!(
                "`{path}`, row {} of column `{column}`: `{field}` is not a number",
                row + 2
            ))
        })?;
        out.push(x);
    }
    Ok(out)
}
