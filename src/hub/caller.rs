//! Who a request comes from, once a door has checked it: a name (the
//! identity answers and runs are recorded under) and a role. The API
//! learns it from a bearer token, the web inbox from a sign-in cookie;
//! what a role may do is checked the same way for both
//! ([`Caller::require`]).

use super::problem::Problem;
use crate::model::token::Role;

/// The authenticated caller.
#[derive(Debug, Clone, PartialEq)]
pub struct Caller {
    /// The identity answers and runs are recorded under.
    pub name: String,
    pub role: Role,
}

impl Caller {
    /// 403 unless the caller's role includes `role`.
    pub fn require(&self, role: Role) -> Result<(), Problem> {
        if self.role >= role {
            Ok(())
        } else {
            Err(Problem::forbidden(format!(
                "this needs a token with role {role} or above; `{}` has role {}",
                self.name, self.role
            )))
        }
    }
}
