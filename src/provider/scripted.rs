//! A model that answers from a script, in process: tests and benches drive
//! the engine through the provider seam without a socket. Every request is
//! kept, so a test can read what the model was asked and how often.

use std::fmt;
use std::sync::{Arc, Mutex};

use super::{ChatRequest, ChatResponse, Usage};
use crate::error::Result;

type Script = dyn Fn(usize, &ChatRequest) -> Result<ChatResponse> + Send + Sync;

/// Answers request `n` (1-based) with `script(n, request)`.
#[derive(Clone)]
pub struct Scripted {
    script: Arc<Script>,
    log: Arc<Mutex<Vec<ChatRequest>>>,
}

impl fmt::Debug for Scripted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Scripted({} requests)", self.count())
    }
}

impl Scripted {
    pub fn new(
        script: impl Fn(usize, &ChatRequest) -> Result<ChatResponse> + Send + Sync + 'static,
    ) -> Self {
        Scripted {
            script: Arc::new(script),
            log: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// A model that answers every request with `REPLY <n> to <agent>`.
    pub fn replies() -> Self {
        Scripted::new(|n, r| Ok(Scripted::text(format!("REPLY {n} to {}", r.agent))))
    }

    /// A plain text answer with a small usage.
    pub fn text(text: impl Into<String>) -> ChatResponse {
        ChatResponse {
            text: text.into(),
            tool_calls: Vec::new(),
            usage: Usage {
                input_tokens: 10,
                output_tokens: 5,
                calls: 1,
            },
        }
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn count(&self) -> usize {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn complete(&self, request: &ChatRequest) -> Result<ChatResponse> {
        let n = {
            let mut log = self.log.lock().unwrap_or_else(|p| p.into_inner());
            log.push(request.clone());
            log.len()
        };
        (self.script)(n, request)
    }
}
