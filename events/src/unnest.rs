//! A batch of rows written in one statement: `insert into t (a, b, …) select … from unnest($1::type[],
//! $2::type[], …)`, every column bound as one typed array. Postgres reads binary arrays: no statement
//! per row, and no JSON document to parse per batch (measured in BENCHMARKS.md, "Typed arrays instead of
//! JSON").

use sqlx::error::BoxDynError;
use sqlx::postgres::{PgArguments, PgQueryResult};
use sqlx::{Arguments, Encode, PgConnection, Postgres, Type};

/// The columns of one insert over `rows`, each encoded as it is added.
pub struct Unnest<'r, R> {
    rows: &'r [R],
    arrays: Vec<Array>,
    arguments: PgArguments,
    /// The first value that could not be encoded, reported by [`Unnest::execute`].
    error: Option<BoxDynError>,
}

/// One bound array: its element type, the cast the select applies, and the columns it fills.
struct Array {
    ty: &'static str,
    cast: &'static str,
    columns: Vec<&'static str>,
}

impl<'r, R> Unnest<'r, R> {
    pub fn new(rows: &'r [R]) -> Self {
        Unnest { rows, arrays: Vec::new(), arguments: PgArguments::default(), error: None }
    }

    /// Column `name`, of Postgres type `ty`, one `value` per row.
    pub fn column<T>(self, name: &'static str, ty: &'static str, value: impl Fn(&'r R) -> T) -> Self
    where
        Vec<T>: Encode<'r, Postgres> + Type<Postgres>,
    {
        self.cast(name, ty, "", value)
    }

    /// Column `name`, whose values travel as `ty` and are cast by `cast` (`"::uuid[]"` for an array of
    /// uuids bound as its text form).
    pub fn cast<T>(
        mut self,
        name: &'static str,
        ty: &'static str,
        cast: &'static str,
        value: impl Fn(&'r R) -> T,
    ) -> Self
    where
        Vec<T>: Encode<'r, Postgres> + Type<Postgres>,
    {
        let values: Vec<T> = self.rows.iter().map(value).collect();
        if let Err(error) = self.arguments.add(values) {
            self.error.get_or_insert(error);
        }
        self.arrays.push(Array { ty, cast, columns: vec![name] });
        self
    }

    /// The last column's values again, under column `name` (`created_at` and `updated_at` from one).
    pub fn also(mut self, name: &'static str) -> Self {
        if let Some(last) = self.arrays.last_mut() {
            last.columns.push(name);
        }
        self
    }

    /// `{insert} (columns) select … from unnest(…) as u(…) {suffix}`.
    pub fn sql(&self, insert: &str, suffix: &str) -> String {
        let mut columns = Vec::new();
        let mut select = Vec::new();
        let mut arrays = Vec::new();
        let mut names = Vec::new();
        for (i, array) in self.arrays.iter().enumerate() {
            for column in &array.columns {
                columns.push(*column);
                select.push(format!("c{i}{}", array.cast));
            }
            arrays.push(format!("${}::{}[]", i + 1, array.ty));
            names.push(format!("c{i}"));
        }
        format!(
            "{insert} ({}) select {} from unnest({}) as u({}) {suffix}",
            columns.join(", "),
            select.join(", "),
            arrays.join(", "),
            names.join(", ")
        )
    }

    /// Runs the insert (nothing when there are no rows).
    pub async fn execute(
        self,
        conn: &mut PgConnection,
        insert: &str,
        suffix: &str,
    ) -> Result<PgQueryResult, sqlx::Error> {
        if let Some(error) = self.error {
            return Err(sqlx::Error::Encode(error));
        }
        if self.rows.is_empty() {
            return Ok(PgQueryResult::default());
        }
        let sql = self.sql(insert, suffix);
        sqlx::query_with(sqlx::AssertSqlSafe(sql), self.arguments).execute(conn).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_array_per_column_and_a_column_filled_twice() {
        let rows = [(1_i64, "a"), (2, "b")];
        let unnest =
            Unnest::new(&rows).column("id", "int8", |r| r.0).also("copy").cast("tags", "text", "::uuid[]", |r| r.1);
        assert_eq!(
            unnest.sql("insert into t", "on conflict do nothing"),
            "insert into t (id, copy, tags) select c0, c0, c1::uuid[] from unnest($1::int8[], $2::text[]) as u(c0, c1) \
             on conflict do nothing"
        );
    }
}
