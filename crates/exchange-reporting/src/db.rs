//! One connection to either backend, behind the few operations the store
//! needs: run a statement, run a query, run a script.
//!
//! Statements are written once with `?` placeholders and only portable SQL
//! (integer and text columns, `CAST(... AS BIGINT)` around sums, which
//! PostgreSQL would otherwise widen to `NUMERIC`); for PostgreSQL the
//! placeholders are renumbered to `$1, $2, ...`. Every integer column is a
//! `BIGINT`, so every parameter binds as a 64-bit integer on both.

use std::collections::HashMap;

use postgres::types::{IsNull, ToSql, Type};
use rusqlite::types::{ToSqlOutput, ValueRef};

use crate::record::{Columns, PgRecord, Record, SqliteRecord};
use crate::StoreError;

/// A `u64` of the log as the store keeps it: the `BIGINT` with the same 64
/// bits. Every value below 2^63 (every amount, time and id the core
/// assigns) is stored as itself, so stores written before keep their
/// meaning and SQL compares and sums them as before; a larger one (an id a
/// client named in a refused command) is stored as a negative number and
/// read back exactly by [`loaded`]. Only SQL's order of such values is off
/// (they sort first), and no query orders by a client-named value.
pub fn stored(value: u64) -> i64 {
    value as i64
}

/// The `u64` a `BIGINT` written by [`stored`] holds.
pub fn loaded(value: i64) -> u64 {
    value as u64
}

/// A parameter or a column value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Val {
    Int(i64),
    Text(String),
    Null,
}

impl Val {
    pub fn int(&self) -> Result<i64, StoreError> {
        match self {
            Val::Int(v) => Ok(*v),
            other => Err(StoreError::Schema(format!(
                "expected an integer, found {other:?}"
            ))),
        }
    }

    pub fn opt_int(&self) -> Result<Option<i64>, StoreError> {
        match self {
            Val::Null => Ok(None),
            other => other.int().map(Some),
        }
    }

    pub fn text(&self) -> Result<String, StoreError> {
        match self {
            Val::Text(v) => Ok(v.clone()),
            other => Err(StoreError::Schema(format!(
                "expected text, found {other:?}"
            ))),
        }
    }

    pub fn opt_text(&self) -> Result<Option<String>, StoreError> {
        match self {
            Val::Null => Ok(None),
            other => other.text().map(Some),
        }
    }
}

impl From<i64> for Val {
    fn from(v: i64) -> Val {
        Val::Int(v)
    }
}

impl From<&str> for Val {
    fn from(v: &str) -> Val {
        Val::Text(v.to_string())
    }
}

impl From<String> for Val {
    fn from(v: String) -> Val {
        Val::Text(v)
    }
}

impl<T: Into<Val>> From<Option<T>> for Val {
    fn from(v: Option<T>) -> Val {
        v.map_or(Val::Null, Into::into)
    }
}

impl rusqlite::ToSql for Val {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Val::Int(v) => ToSqlOutput::from(*v),
            Val::Text(v) => ToSqlOutput::from(v.as_str()),
            Val::Null => ToSqlOutput::from(rusqlite::types::Null),
        })
    }
}

impl ToSql for Val {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut postgres::types::private::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            // A placeholder compared with a small literal can be typed
            // INT4 by PostgreSQL; bind what fits.
            Val::Int(v) if *ty == Type::INT4 => i32::try_from(*v)?.to_sql(ty, out),
            Val::Int(v) => v.to_sql(ty, out),
            Val::Text(v) => v.to_sql(ty, out),
            Val::Null => Ok(IsNull::Yes),
        }
    }

    fn accepts(ty: &Type) -> bool {
        matches!(*ty, Type::INT8 | Type::INT4) || <String as ToSql>::accepts(ty)
    }

    postgres::types::to_sql_checked!();
}

/// A parameter borrowed from one of the writer's typed rows: binding it
/// copies nothing on the Rust side (the writer's rows hold no heap data).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Param<'a> {
    Int(i64),
    Text(&'a str),
    Null,
}

impl<'a> From<Option<i64>> for Param<'a> {
    fn from(v: Option<i64>) -> Param<'a> {
        v.map_or(Param::Null, Param::Int)
    }
}

impl<'a> From<Option<&'a str>> for Param<'a> {
    fn from(v: Option<&'a str>) -> Param<'a> {
        v.map_or(Param::Null, Param::Text)
    }
}

impl rusqlite::ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match *self {
            Param::Int(v) => ToSqlOutput::Borrowed(ValueRef::Integer(v)),
            Param::Text(v) => ToSqlOutput::Borrowed(ValueRef::Text(v.as_bytes())),
            Param::Null => ToSqlOutput::Borrowed(ValueRef::Null),
        })
    }
}

impl ToSql for Param<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut postgres::types::private::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match *self {
            Param::Int(v) if *ty == Type::INT4 => i32::try_from(v)?.to_sql(ty, out),
            Param::Int(v) => v.to_sql(ty, out),
            Param::Text(v) => v.to_sql(ty, out),
            Param::Null => Ok(IsNull::Yes),
        }
    }

    fn accepts(ty: &Type) -> bool {
        matches!(*ty, Type::INT8 | Type::INT4) || <&str as ToSql>::accepts(ty)
    }

    postgres::types::to_sql_checked!();
}

pub(crate) enum Conn {
    Sqlite(rusqlite::Connection),
    Postgres {
        client: Box<postgres::Client>,
        prepared: HashMap<String, postgres::Statement>,
    },
}

/// `?` placeholders as PostgreSQL's `$n` (no statement here has a `?`
/// inside a string literal).
fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push('$');
            out.push_str(&n.to_string());
        } else {
            out.push(c);
        }
    }
    out
}

fn pg_params(params: &[Val]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}

impl Conn {
    pub fn is_postgres(&self) -> bool {
        matches!(self, Conn::Postgres { .. })
    }

    /// Runs several statements without parameters (schema, transactions).
    pub fn script(&mut self, sql: &str) -> Result<(), StoreError> {
        match self {
            Conn::Sqlite(conn) => conn.execute_batch(sql)?,
            Conn::Postgres { client, .. } => client.batch_execute(sql)?,
        }
        Ok(())
    }

    /// Runs one statement; returns the rows it changed.
    pub fn exec(&mut self, sql: &str, params: &[Val]) -> Result<u64, StoreError> {
        match self {
            Conn::Sqlite(conn) => {
                let mut statement = conn.prepare_cached(sql)?;
                Ok(statement.execute(rusqlite::params_from_iter(params.iter()))? as u64)
            }
            Conn::Postgres { client, prepared } => {
                let statement = pg_prepare(client, prepared, sql)?;
                Ok(client.execute(&statement, &pg_params(params))?)
            }
        }
    }

    /// Runs one query and decodes every row with `decode`, which reads
    /// the row's columns by name.
    pub fn rows<T>(
        &mut self,
        sql: &str,
        params: &[Val],
        mut decode: impl FnMut(&dyn Record) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        match self {
            Conn::Sqlite(conn) => {
                let mut statement = conn.prepare_cached(sql)?;
                let columns = Columns::new(statement.column_names().map(String::from).collect());
                let mut rows = statement.query(rusqlite::params_from_iter(params.iter()))?;
                let mut out = Vec::new();
                while let Some(row) = rows.next()? {
                    let columns = &columns;
                    out.push(decode(&SqliteRecord { row, columns })?);
                }
                Ok(out)
            }
            Conn::Postgres { client, prepared } => {
                let statement = pg_prepare(client, prepared, sql)?;
                let columns = Columns::new(
                    statement
                        .columns()
                        .iter()
                        .map(|c| c.name().to_string())
                        .collect(),
                );
                let rows = client.query(&statement, &pg_params(params))?;
                let columns = &columns;
                rows.iter()
                    .map(|row| decode(&PgRecord { row, columns }))
                    .collect()
            }
        }
    }

    /// The first row of a query (a lookup by key, an aggregate), decoded
    /// as by [`Conn::rows`].
    pub fn row<T>(
        &mut self,
        sql: &str,
        params: &[Val],
        decode: impl FnMut(&dyn Record) -> Result<T, StoreError>,
    ) -> Result<Option<T>, StoreError> {
        Ok(self.rows(sql, params, decode)?.into_iter().next())
    }

    /// Every row as its values in the statement's order: for the tests
    /// that look at a pragma or the schema itself, never to decode a row.
    #[cfg(test)]
    pub fn query(&mut self, sql: &str, params: &[Val]) -> Result<Vec<Vec<Val>>, StoreError> {
        self.rows(sql, params, |row| {
            (0..row.columns().len()).map(|i| row.value_at(i)).collect()
        })
    }
}

pub(crate) fn pg_prepare(
    client: &mut postgres::Client,
    prepared: &mut HashMap<String, postgres::Statement>,
    sql: &str,
) -> Result<postgres::Statement, StoreError> {
    if let Some(statement) = prepared.get(sql) {
        return Ok(statement.clone());
    }
    let statement = client.prepare(&numbered(sql))?;
    prepared.insert(sql.to_string(), statement.clone());
    Ok(statement)
}

#[cfg(test)]
mod tests {
    use super::numbered;

    #[test]
    fn placeholders_are_numbered_in_order() {
        assert_eq!(
            numbered("SELECT a FROM t WHERE b = ? AND c < ? LIMIT ?"),
            "SELECT a FROM t WHERE b = $1 AND c < $2 LIMIT $3"
        );
    }
}
