//! A result row read by the names of its columns.
//!
//! Every query decodes its rows through [`Record`], naming each column it
//! reads, never counting them: adding, removing or reordering a column in
//! a `SELECT` cannot shift a value into another field, and a decoder that
//! asks for a column the statement does not select (or selects twice) gets
//! an error naming it instead of a neighbour's value. Only
//! [`Record::value_at`] is written per backend; the typed reads on top of
//! it are shared, so SQLite and PostgreSQL decode alike.

use postgres::types::Type;
use rusqlite::types::ValueRef;
use thiserror::Error;

use crate::db::{loaded, Val};
use crate::StoreError;

/// A column a decoder asked for that the row cannot give as asked.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum ColumnError {
    #[error("column {column:?} is not in the query's result")]
    Missing { column: String },
    #[error("column {column:?} is in the query's result more than once")]
    Ambiguous { column: String },
    #[error("column {column:?} is NULL, expected {expected}")]
    Null {
        column: String,
        expected: &'static str,
    },
    #[error("column {column:?} holds {found}, expected {expected}")]
    Type {
        column: String,
        expected: &'static str,
        found: String,
    },
}

/// The names of a result's columns, as the backend reports them (the
/// `AS` alias where there is one), in the statement's order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Columns(Vec<String>);

impl Columns {
    pub(crate) fn new(names: Vec<String>) -> Columns {
        Columns(names)
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// Where `column` is; an error when it is not there exactly once.
    fn index(&self, column: &str) -> Result<usize, ColumnError> {
        let mut found = (0..self.0.len()).filter(|&i| self.0[i] == column);
        match (found.next(), found.next()) {
            (Some(index), None) => Ok(index),
            (None, _) => Err(ColumnError::Missing {
                column: column.to_string(),
            }),
            (Some(_), Some(_)) => Err(ColumnError::Ambiguous {
                column: column.to_string(),
            }),
        }
    }

    fn name(&self, index: usize) -> &str {
        self.0.get(index).map_or("?", String::as_str)
    }

    /// The error for a value of a type the store never writes.
    fn unexpected(&self, index: usize, found: String) -> StoreError {
        ColumnError::Type {
            column: self.name(index).to_string(),
            expected: "an integer, text or NULL",
            found,
        }
        .into()
    }
}

/// One row of a result, read by column name.
pub(crate) trait Record {
    fn columns(&self) -> &Columns;

    /// The value at `index` as the backend holds it. Decoders read by name
    /// (the methods below); only the tests' raw query reads by position.
    fn value_at(&self, index: usize) -> Result<Val, StoreError>;

    fn value(&self, column: &str) -> Result<Val, StoreError> {
        self.value_at(self.columns().index(column)?)
    }

    fn opt_i64(&self, column: &str) -> Result<Option<i64>, StoreError> {
        match self.value(column)? {
            Val::Int(value) => Ok(Some(value)),
            Val::Null => Ok(None),
            Val::Text(_) => Err(mistyped(column, "an integer", "text")),
        }
    }

    fn i64(&self, column: &str) -> Result<i64, StoreError> {
        self.opt_i64(column)?
            .ok_or_else(|| null(column, "an integer"))
    }

    /// A `u64` column: the `BIGINT` with the same bits (see
    /// [`crate::db::stored`]).
    fn u64(&self, column: &str) -> Result<u64, StoreError> {
        self.i64(column).map(loaded)
    }

    fn opt_u64(&self, column: &str) -> Result<Option<u64>, StoreError> {
        Ok(self.opt_i64(column)?.map(loaded))
    }

    /// A flag, kept as the integer 0 or 1 (an integer column like every
    /// other, so both backends read and compare it alike); any other value
    /// is an error, not a guess.
    fn flag(&self, column: &str) -> Result<bool, StoreError> {
        match self.i64(column)? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(ColumnError::Type {
                column: column.to_string(),
                expected: "0 or 1",
                found: other.to_string(),
            }
            .into()),
        }
    }

    fn opt_text(&self, column: &str) -> Result<Option<String>, StoreError> {
        match self.value(column)? {
            Val::Text(value) => Ok(Some(value)),
            Val::Null => Ok(None),
            Val::Int(_) => Err(mistyped(column, "text", "an integer")),
        }
    }

    fn text(&self, column: &str) -> Result<String, StoreError> {
        self.opt_text(column)?.ok_or_else(|| null(column, "text"))
    }
}

fn null(column: &str, expected: &'static str) -> StoreError {
    ColumnError::Null {
        column: column.to_string(),
        expected,
    }
    .into()
}

fn mistyped(column: &str, expected: &'static str, found: &str) -> StoreError {
    ColumnError::Type {
        column: column.to_string(),
        expected,
        found: found.to_string(),
    }
    .into()
}

/// A row of a SQLite result.
pub(crate) struct SqliteRecord<'a, 'r> {
    pub row: &'a rusqlite::Row<'r>,
    pub columns: &'a Columns,
}

impl Record for SqliteRecord<'_, '_> {
    fn columns(&self) -> &Columns {
        self.columns
    }

    fn value_at(&self, index: usize) -> Result<Val, StoreError> {
        Ok(match self.row.get_ref(index)? {
            ValueRef::Null => Val::Null,
            ValueRef::Integer(v) => Val::Int(v),
            ValueRef::Text(t) => Val::Text(String::from_utf8_lossy(t).into_owned()),
            other => {
                return Err(self
                    .columns
                    .unexpected(index, other.data_type().to_string()))
            }
        })
    }
}

/// A row of a PostgreSQL result.
pub(crate) struct PgRecord<'a> {
    pub row: &'a postgres::Row,
    pub columns: &'a Columns,
}

impl Record for PgRecord<'_> {
    fn columns(&self) -> &Columns {
        self.columns
    }

    fn value_at(&self, index: usize) -> Result<Val, StoreError> {
        let Some(column) = self.row.columns().get(index) else {
            return Err(ColumnError::Missing {
                column: self.columns.name(index).to_string(),
            }
            .into());
        };
        let row = self.row;
        Ok(match *column.type_() {
            Type::INT8 => row.try_get::<_, Option<i64>>(index)?.into(),
            // A count or a small literal can come back as INT4.
            Type::INT4 => row.try_get::<_, Option<i32>>(index)?.map(i64::from).into(),
            Type::TEXT | Type::VARCHAR => row.try_get::<_, Option<String>>(index)?.into(),
            ref other => return Err(self.columns.unexpected(index, other.to_string())),
        })
    }
}
