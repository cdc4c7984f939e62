//! Every integration test in one binary (one link instead of one per
//! file): the real `strands` binary over 127.0.0.1 against the fakes of
//! `tests/common` — an OpenAI-compatible model, an Anthropic Messages API
//! (for Claude Code), a Slack Web API, a Bot Framework, an HTTP target —
//! plus the property, layering and store-format tests. Each module is one
//! area; run one with `cargo test --test it cli_tools::`.

#[path = "../common/mod.rs"]
mod common;

mod agent_sdks;
mod agent_sdks_ts;
mod answer_batch;
mod answers_repeat;
mod api;
mod api_client;
mod api_guards;
mod api_webhooks;
mod approvals;
mod claude_code;
mod cli_approvers;
mod cli_audit;
mod cli_business_hours;
mod cli_cancel;
mod cli_config;
mod cli_egress;
mod cli_evaluator;
mod cli_flows;
mod cli_gate_types;
mod cli_graph;
mod cli_links;
mod cli_mcp;
mod cli_native_tools;
mod cli_orchestrator;
mod cli_paging;
mod cli_parallel;
mod cli_parity;
mod cli_routing;
mod cli_runtime;
mod cli_strands_cli;
mod cli_sweep;
mod cli_tools;
mod cli_trust;
mod cli_validate;
mod cli_webhooks;
mod commands_once;
mod compat;
mod crash_loop;
mod delegation;
mod docs;
mod drives;
mod email;
mod forms;
mod layering;
mod mcp_elicitation;
mod mcp_server;
mod oidc;
mod passkeys;
mod people;
mod policies;
mod policies_rooms;
mod policy_backtest;
mod props;
mod providers;
mod queue;
mod queue_tls;
mod report;
mod session_formats;
mod slack_approvers;
mod slack_bot;
mod slack_guards;
mod slack_harness;
mod slack_home;
mod slack_parallel;
mod slack_reasons;
mod slack_repost;
mod slack_socket;
mod slack_timers;
mod slack_tools;
mod store_backup;
mod store_postgres;
mod store_scale;
mod store_syncs;
mod strands_cli_examples;
mod teams_card_schema;
mod teams_cards;
mod teams_delivery;
mod teams_inbox;
mod teams_package;
mod teams_playground;
mod teams_protocol;
mod teams_replicas;
mod teams_room;
mod teams_tools;
mod traces;
mod web;
mod web_browser;
