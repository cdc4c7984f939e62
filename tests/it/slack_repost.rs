//! Start-up asking again where no approval message was posted: runs that
//! paused while no bot served (here: through the CLI), then `strands serve`
//! with the fake Slack. Their messages go out through a bounded, paced
//! queue in the background (`hub::repost`): each once, never more than
//! `STRANDS_REPOST_CONCURRENCY` in flight, a 429's `Retry-After` waited out
//! by the message it hit (which keeps its place), and the service answers
//! `/healthz` while the queue is still waiting on Slack.
//!
//! No timing is asserted but waits that must have happened (a retry after
//! `Retry-After`): the queue's progress is held at the fake (it can keep
//! `chat.postMessage` answers back) and checked by what arrived.

use crate::common::fake_slack::{
    all_text, write_workflows, ApprovalMessage, Bot, BotConfig, FakeSlack, SlackBehaviour, WAIT,
};
use crate::common::slack_story::{DEPLOY, QUIET};
use crate::common::{run_paused, FakeLlm, Sandbox};
use std::time::Duration;

/// `n` deploy runs paused at their gate by the CLI: no message posted.
fn paused_without_slack(sandbox: &Sandbox, llm: &FakeLlm, n: usize) -> Vec<String> {
    let spec = sandbox.spec("deploy.yaml", DEPLOY, llm);
    (0..n).map(|_| run_paused(sandbox, &spec)).collect()
}

/// The bot on the sandbox's store, its re-post queue set to `concurrency`
/// in flight and no pause between starts.
fn bot(sandbox: &Sandbox, slack: &FakeSlack, llm: &FakeLlm, concurrency: usize) -> Bot {
    let dir = write_workflows(sandbox, llm, &[("deploy", DEPLOY)]);
    let cfg = BotConfig::new(sandbox, slack, &dir)
        .with("STRANDS_REPOST_CONCURRENCY", Some(&concurrency.to_string()))
        .with("STRANDS_REPOST_INTERVAL_MS", Some("0"));
    Bot::launch(slack, cfg)
}

/// Asserts each run got exactly one approval message, and no other was posted.
#[track_caller]
fn assert_one_message_each(slack: &FakeSlack, ids: &[String]) {
    let approvals: Vec<ApprovalMessage> = slack.approvals();
    assert_eq!(
        approvals.len(),
        ids.len(),
        "one approval message per run\n{}",
        slack.describe()
    );
    for id in ids {
        let mine = approvals
            .iter()
            .filter(|m| all_text(&m.call.body).contains(id.as_str()))
            .count();
        assert_eq!(mine, 1, "run {id} was asked for once\n{}", slack.describe());
    }
}

#[test]
fn runs_never_asked_are_posted_once_each_at_most_n_at_a_time_while_the_service_answers() {
    const RUNS: usize = 6;
    const BOUND: usize = 2;
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let ids = paused_without_slack(&sandbox, &llm, RUNS);
    assert!(slack.is_empty(), "the CLI runs asked nobody in Slack");

    // Slack keeps its answers back: the queue fills up to its bound and
    // waits there.
    slack.hold_posts(true);
    let mut bot = bot(&sandbox, &slack, &llm, BOUND);
    let health = bot.get("/healthz");
    assert_eq!(
        health.status, 200,
        "start-up does not wait for the queue: {health:?}"
    );
    assert!(
        slack.wait_until(WAIT, |s| s.posts_in_flight() == BOUND),
        "{BOUND} re-posts in flight\n{}",
        slack.describe()
    );
    std::thread::sleep(QUIET);
    assert_eq!(
        slack.calls_to("chat.postMessage").len(),
        BOUND,
        "the others wait for a place in the queue\n{}",
        slack.describe()
    );
    let health = bot.get("/healthz");
    assert_eq!(
        health.status, 200,
        "answers while the queue waits: {health:?}"
    );

    slack.hold_posts(false);
    assert!(
        slack.wait_until(WAIT, |s| s.approvals().len() == RUNS),
        "every run asked for\n{}",
        slack.describe()
    );
    std::thread::sleep(QUIET);
    assert_one_message_each(&slack, &ids);
    assert_eq!(
        slack.max_posts_in_flight(),
        BOUND,
        "never more than {BOUND} in flight"
    );

    // Posted is posted: the next start-up asks nobody again.
    let before = slack.len();
    bot.stop();
    bot.restart();
    assert_eq!(bot.get("/healthz").status, 200);
    slack.assert_no_calls_since(before, QUIET, "nothing left to ask again after a restart");
}

#[test]
fn a_rate_limited_re_post_waits_retry_after_and_holds_the_queue_with_it() {
    const RUNS: usize = 3;
    let llm = FakeLlm::start();
    let slack = FakeSlack::start_with(SlackBehaviour {
        rate_limited_posts: 1,
        retry_after_secs: 2,
        ..SlackBehaviour::default()
    });
    let sandbox = Sandbox::new();
    let ids = paused_without_slack(&sandbox, &llm, RUNS);
    let _bot = bot(&sandbox, &slack, &llm, 1);
    assert!(
        slack.wait_until(WAIT, |s| s.approvals().len() == RUNS),
        "every run asked for\n{}",
        slack.describe()
    );
    std::thread::sleep(QUIET);
    let posts = slack.calls_to("chat.postMessage");
    assert_eq!(
        posts.len(),
        RUNS + 1,
        "one 429, then one post each\n{}",
        slack.describe()
    );
    assert_eq!(posts[0].status, 429, "{posts:#?}");
    // The next post is the same message again, after Retry-After: 2; the
    // queue (one place) did not move on meanwhile.
    assert_eq!(
        posts[1].body["blocks"], posts[0].body["blocks"],
        "the rate-limited message is retried before any other"
    );
    let waited = posts[1].at - posts[0].at;
    assert!(
        waited >= Duration::from_millis(1900),
        "the retry honours Retry-After: 2 (came after {waited:?})"
    );
    assert_one_message_each(&slack, &ids);
}
