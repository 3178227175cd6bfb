#!/bin/sh
# A real command-line coding agent as a campaign's `agent.command` (docs/search.md, "A real coding
# agent"). evo runs this in a fresh tree of the baseline (or of the best candidate so far, with
# "base": "best"), the brief as JSON on stdin, inside its sandbox with the network and only the
# variables the campaign names in `agent.pass_env`. Whatever the agent leaves changed in the tree
# is the candidate; EVO_EXPLANATION.md at the tree root is its stated reason.
#
# Set AGENT to the agent's non-interactive command that takes a prompt as its last argument and
# edits the current folder (for example "my-agent --non-interactive --yes --prompt"); its token
# comes in through `agent.pass_env`, never through this file.
#
# Costs: when the agent's command can say what a run cost (tokens, dollars: one unit for the
# campaign), write it as {"cost": N} to the file the brief names in "cost_file", at the tree root,
# after the agent ends (run it without `exec` then); `search.max_cost` stops the search before a
# run would start past the limit (docs/search.md). A run that writes none counts as 0.
set -eu
: "${AGENT:?set AGENT to the coding agent command, and list AGENT and its token in agent.pass_env}"
brief=$(mktemp)
trap 'rm -f "$brief"' EXIT
cat > "$brief"
prompt=$(cat <<PROMPT
You are optimising the program in the current folder for speed. The brief below is JSON: its
"objective", "bottleneck" and "constraints" say what to do; "build", "build_cwd", "test" and
"scenarios" say how it is built, tested and timed; never change a file matching "protected".
"history" lists every candidate of earlier rounds with its status, reason, screening median
(above 1 is faster) and patch: do not repeat what failed or did not gain; build on what gained.
When "parent" is set, the tree already holds that candidate's change: improve on it.
Make one focused change. Then write why it is faster, in a few sentences, to the file named by
"explanation_file" at the root of the tree. Do not commit.

$(cat "$brief")
PROMPT
)
# shellcheck disable=SC2086 # AGENT is a command line on purpose
exec $AGENT "$prompt"
