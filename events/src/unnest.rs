//! A batch of rows written in one statement: `insert into t (a, b, …) select … from unnest($1::type[],
//! $2::type[], …)`, every column bound as one typed array, or as one value when every row shares it
//! (`constant`). Each column's Postgres type is the one sqlx encodes its Rust values as, so the statement
//! cannot name another. Postgres reads binary arrays: no statement per row, and no JSON document to parse
//! per batch (measured in BENCHMARKS.md, "Typed arrays instead of JSON").

use sqlx::error::BoxDynError;
use sqlx::postgres::{PgArguments, PgQueryResult};
use sqlx::{Arguments, Encode, PgConnection, Postgres, Type, TypeInfo};

/// The Postgres type sqlx encodes `T` as (`int8` for `i64`, `text` for `&str`), as the statement casts
/// its parameter.
fn type_name<T: Type<Postgres>>() -> String {
    T::type_info().name().to_ascii_lowercase()
}

/// The columns of one insert over `rows`, each encoded as it is added.
pub struct Unnest<'r, R> {
    rows: &'r [R],
    binds: Vec<Bind>,
    arguments: PgArguments,
    /// The first value that could not be encoded, reported by [`Unnest::execute`].
    error: Option<BoxDynError>,
}

/// One bound parameter: an array of one value per row, or one value for every row; its type, the cast
/// the select applies, and the columns it fills.
struct Bind {
    per_row: bool,
    ty: String,
    cast: &'static str,
    columns: Vec<&'static str>,
}

impl<'r, R> Unnest<'r, R> {
    pub fn new(rows: &'r [R]) -> Self {
        Unnest { rows, binds: Vec::new(), arguments: PgArguments::default(), error: None }
    }

    /// Column `name`, one `value` per row.
    pub fn column<T>(self, name: &'static str, value: impl Fn(&'r R) -> T) -> Self
    where
        T: Type<Postgres>,
        Vec<T>: Encode<'r, Postgres> + Type<Postgres>,
    {
        self.cast(name, "", value)
    }

    /// Column `name`, whose values are cast by `cast` in the select (`"::uuid[]"` for an array of uuids
    /// bound as its text form).
    pub fn cast<T>(self, name: &'static str, cast: &'static str, value: impl Fn(&'r R) -> T) -> Self
    where
        T: Type<Postgres>,
        Vec<T>: Encode<'r, Postgres> + Type<Postgres>,
    {
        let values: Vec<T> = self.rows.iter().map(value).collect();
        self.bind(values, Bind { per_row: true, ty: type_name::<T>(), cast, columns: vec![name] })
    }

    /// Column `name`, the same `value` in every row (the organization of a batch that has one).
    pub fn constant<T>(self, name: &'static str, value: T) -> Self
    where
        T: Encode<'r, Postgres> + Type<Postgres>,
    {
        self.bind(value, Bind { per_row: false, ty: type_name::<T>(), cast: "", columns: vec![name] })
    }

    fn bind<T>(mut self, value: T, bind: Bind) -> Self
    where
        T: Encode<'r, Postgres> + Type<Postgres>,
    {
        if let Err(error) = self.arguments.add(value) {
            self.error.get_or_insert(error);
        }
        self.binds.push(bind);
        self
    }

    /// The last column's values again, under column `name` (`created_at` and `updated_at` from one).
    pub fn also(mut self, name: &'static str) -> Self {
        if let Some(last) = self.binds.last_mut() {
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
        for (i, bind) in self.binds.iter().enumerate() {
            let value = if bind.per_row {
                arrays.push(format!("${}::{}[]", i + 1, bind.ty));
                names.push(format!("c{i}"));
                format!("c{i}{}", bind.cast)
            } else {
                format!("${}::{}", i + 1, bind.ty)
            };
            for column in &bind.columns {
                columns.push(*column);
                select.push(value.clone());
            }
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
    fn a_constant_is_bound_once_and_selected_in_every_row() {
        let rows = [1_i64, 2];
        let unnest = Unnest::new(&rows).constant("org_id", uuid::Uuid::nil()).column("n", |r| *r);
        assert_eq!(
            unnest.sql("insert into t", ""),
            "insert into t (org_id, n) select $1::uuid, c1 from unnest($2::int8[]) as u(c1) "
        );
    }

    #[test]
    fn one_array_per_column_and_a_column_filled_twice() {
        let rows = [(1_i64, "a"), (2, "b")];
        let unnest = Unnest::new(&rows).column("id", |r| r.0).also("copy").cast("tags", "::uuid[]", |r| r.1);
        assert_eq!(
            unnest.sql("insert into t", "on conflict do nothing"),
            "insert into t (id, copy, tags) select c0, c0, c1::uuid[] from unnest($1::int8[], $2::text[]) as u(c0, c1) \
             on conflict do nothing"
        );
    }
}
