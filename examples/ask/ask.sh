#!/bin/sh
# Ask for a human's yes from any CI, with curl only (no strands binary on the
# runner): ask, then wait on the same request until it is decided.
#   STRANDS_SERVER=https://strands.corp.example STRANDS_TOKEN=stk_… \
#   APPROVERS='"alice","group:sre"' KEY="$CI_PIPELINE_ID" sh examples/ask/ask.sh "Deploy v1.2 to prod?"
# Exit 0 approved, 1 rejected, 4 timed out (as `strands ask`).
set -eu
S="${STRANDS_SERVER%/}/api/v1"
TITLE="${1:?usage: ask.sh TITLE}"
KEY="${KEY:-$(date +%s)}"
auth="Authorization: Bearer $STRANDS_TOKEN"
field() { sed -n "s/.*\"$1\":\"\\([^\"]*\\)\".*/\\1/p"; }

body=$(printf '{"title":"%s","approvers":[%s],"key":"%s","timeout_minutes":%s}' \
  "$TITLE" "${APPROVERS:-\"alice\"}" "$KEY" "${TIMEOUT_MINUTES:-60}")
reply=$(curl -sf -X POST "$S/approvals" -H "$auth" -H 'content-type: application/json' -d "$body")
id=$(printf '%s' "$reply" | field id)
echo "asked: request $id" >&2
status=pending
while [ "$status" = pending ]; do
  # A broken connection just waits again on the same request.
  reply=$(curl -sf "$S/approvals/$id?wait=60" -H "$auth") || { sleep 2; continue; }
  status=$(printf '%s' "$reply" | field status)
done
echo "$status by $(printf '%s' "$reply" | field decided_by)"
case "$status" in
  approved) exit 0 ;;
  rejected) exit 1 ;;
  timed_out) [ "$(printf '%s' "$reply" | field decision)" = approved ] && exit 0 || exit 4 ;;
  *) exit 10 ;;
esac
