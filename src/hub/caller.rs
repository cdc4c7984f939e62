//! Who a request comes from, once a door has checked it: a name (the
//! identity answers and runs are recorded under) and a role. The API
//! learns it from a bearer token, the web inbox from a sign-in cookie;
//! what a role may do is checked the same way for both
//! ([`Caller::require`]). A web sign-in through the identity provider also
//! carries the groups its ID token said the person is in (`idp_groups`),
//! which count for `group:NAME` approvers.

use super::problem::Problem;
use crate::model::token::Role;

/// The authenticated caller.
#[derive(Debug, Clone, PartialEq)]
pub struct Caller {
    /// The identity answers and runs are recorded under.
    pub name: String,
    pub role: Role,
    /// The identity provider's groups for this person (a web sign-in
    /// through OpenID Connect); empty for tokens and one-tap links.
    pub idp_groups: Vec<String>,
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
