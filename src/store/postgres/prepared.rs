//! Every statement the store sends is prepared once per connection and
//! kept (deadpool's statement cache). A statement sent as text is parsed,
//! planned and described by the server each time, and costs tokio-postgres
//! a round trip of its own before it runs: under load that was a third of
//! the database's CPU and twice the round trips of a write. The methods
//! here are the plain `query`/`execute` ones taking SQL text, through the
//! cache.

use deadpool_postgres::{ClientWrapper, Transaction};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Error, Row};

/// `query`, `query_one`, `query_opt` and `execute` on SQL text, prepared
/// once per connection.
pub(super) trait Prepared {
    async fn query_c(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, Error>;
    async fn query_one_c(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Row, Error>;
    async fn query_opt_c(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, Error>;
    async fn execute_c(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64, Error>;
}

macro_rules! prepared {
    ($t:ty) => {
        impl Prepared for $t {
            async fn query_c(
                &self,
                sql: &str,
                params: &[&(dyn ToSql + Sync)],
            ) -> Result<Vec<Row>, Error> {
                let statement = self.prepare_cached(sql).await?;
                self.query(&statement, params).await
            }

            async fn query_one_c(
                &self,
                sql: &str,
                params: &[&(dyn ToSql + Sync)],
            ) -> Result<Row, Error> {
                let statement = self.prepare_cached(sql).await?;
                self.query_one(&statement, params).await
            }

            async fn query_opt_c(
                &self,
                sql: &str,
                params: &[&(dyn ToSql + Sync)],
            ) -> Result<Option<Row>, Error> {
                let statement = self.prepare_cached(sql).await?;
                self.query_opt(&statement, params).await
            }

            async fn execute_c(
                &self,
                sql: &str,
                params: &[&(dyn ToSql + Sync)],
            ) -> Result<u64, Error> {
                let statement = self.prepare_cached(sql).await?;
                self.execute(&statement, params).await
            }
        }
    };
}

prepared!(ClientWrapper);
prepared!(Transaction<'_>);
