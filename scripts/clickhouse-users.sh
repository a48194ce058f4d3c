#!/usr/bin/env bash
# Provisions the read-only ClickHouse user that runs tenants' raw analytics
# queries (services/analytics, CLICKHOUSE_QUERY_URL) on a local ClickHouse,
# idempotently: writes users.d/latchkey-query.xml when it differs (as root, or
# whoever may write there) and waits until the user can log in. ClickHouse
# reloads users.d by itself within seconds. 18.16 has no CREATE USER, so the
# user is XML; docs/analytics-queries.md has the SQL for a modern server. The
# profile holds the settings every server since 18.16 knows, and those of later
# servers that the running one lists (an unknown setting breaks a profile).
#
#   CLICKHOUSE_HTTP              server to check (http://127.0.0.1:8123); its user reads system.settings
#   CLICKHOUSE_QUERY_USER        user name (latchkey_query)
#   CLICKHOUSE_QUERY_PASSWORD    its password (latchkey_query_test: a local test server only)
#   CLICKHOUSE_QUERY_DATABASES   databases it may read, space-separated
#                                (latchkey, and the fixed test databases of services/analytics/testing/clickhouse.ts)
#   CLICKHOUSE_USERS_DIR         users.d directory (found from the running server's config when unset)
set -euo pipefail

http=${CLICKHOUSE_HTTP:-http://127.0.0.1:8123}
user=${CLICKHOUSE_QUERY_USER:-latchkey_query}
password=${CLICKHOUSE_QUERY_PASSWORD:-latchkey_query_test}
databases=${CLICKHOUSE_QUERY_DATABASES:-latchkey latchkey_test_query_1 latchkey_test_query_2 latchkey_test_query_3}

# users.d lives next to the server's users config (<users_config> in the config it was started with).
users_dir() {
  if [ -n "${CLICKHOUSE_USERS_DIR:-}" ]; then
    echo "$CLICKHOUSE_USERS_DIR"
    return
  fi
  local pid config users
  for pid in $(pgrep -x clickhouse-serv 2>/dev/null; pgrep -x clickhouse-server 2>/dev/null); do
    config=$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | sed -n 's/^--config-file=//p;s/^--config=//p' | head -1)
    if [ -n "$config" ] && [ -r "$config" ]; then
      users=$(sed -n 's:.*<users_config>\([^<]*\)</users_config>.*:\1:p' "$config" | head -1)
      case "$users" in
        "") users=$(dirname "$config")/users.xml ;;
        /*) ;;
        *) users=$(dirname "$config")/$users ;;
      esac
      echo "$(dirname "$users")/users.d"
      return
    fi
  done
  echo /etc/clickhouse-server/users.d
}

sha=$(printf '%s' "$password" | sha256sum | cut -d' ' -f1)
allowed=""
for db in $databases; do allowed+="<database>$db</database>"; done

# The profile is the limit: readonly=1, so a query may change no setting to another value (nor call table
# functions). Every server since 18.16 knows these.
settings=(
  readonly=1
  max_execution_time=10
  max_result_rows=10000
  max_result_bytes=67108864
  result_overflow_mode=throw
  max_memory_usage=1000000000
  output_format_json_quote_64bit_integers=0
  # Shared by every tenant: threads per query, and the user's queries and memory in all (ingest is another user).
  max_threads=2
  max_concurrent_queries_for_user=32
  max_memory_usage_for_user=8000000000
  # Tenants' expressions stay above the views' workspace filter (services/analytics/src/query-settings.ts).
  enable_optimize_predicate_expression=0
  optimize_move_to_prewhere=0
)
# Later servers' settings. An unknown setting in a profile breaks the user (or the server's start), so each is
# written only where the running server lists it in system.settings.
later=(
  enable_optimize_predicate_expression_to_final_subquery=0
  allow_push_predicate_when_subquery_contains_with=0
  optimize_move_to_prewhere_if_final=0
  move_all_conditions_to_prewhere=0
  enable_multiple_prewhere_read_steps=0
  allow_reorder_prewhere_conditions=0
  query_plan_filter_push_down=0
  query_plan_merge_filters=0
  query_plan_optimize_prewhere=0
  http_write_exception_in_output_format=0
  cancel_http_readonly_queries_on_client_close=1
)
names=""
for s in "${later[@]}"; do names+="${names:+,}'${s%%=*}'"; done
known=$(curl -sf "$http/" --data-binary "SELECT name FROM system.settings WHERE name IN ($names)" 2>/dev/null || true)
for s in "${later[@]}"; do
  if grep -qx "${s%%=*}" <<<"$known"; then settings+=("$s"); fi
done
profile=""
pairs=""
for s in "${settings[@]}"; do
  profile+="      <${s%%=*}>${s#*=}</${s%%=*}>"$'\n'
  pairs+="${pairs:+,}('${s%%=*}','${s#*=}')"
done

xml=$(
  cat <<EOF
<?xml version="1.0"?>
<!-- Written by scripts/clickhouse-users.sh: the read-only user of tenants' raw analytics queries. -->
<yandex>
  <profiles>
    <latchkey_query>
${profile%$'\n'}
    </latchkey_query>
  </profiles>
  <users>
    <$user>
      <password_sha256_hex>$sha</password_sha256_hex>
      <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
      <profile>latchkey_query</profile>
      <quota>default</quota>
      <allow_databases>$allowed</allow_databases>
    </$user>
  </users>
</yandex>
EOF
)

dir=$(users_dir)
file="$dir/latchkey-query.xml"
if [ "$(cat "$file" 2>/dev/null || true)" != "$xml" ]; then
  if mkdir -p "$dir" 2>/dev/null && [ -w "$dir" ]; then
    printf '%s\n' "$xml" >"$file.tmp"
    mv "$file.tmp" "$file"
    echo "clickhouse-users: wrote $file" >&2
  else
    echo "clickhouse-users: cannot write $file; provision user $user yourself (see docs/analytics-queries.md)" >&2
  fi
fi

# The server reloads users.d every few seconds: wait until the user logs in with this profile.
for _ in $(seq 1 60); do
  seen=$(curl -sf -u "$user:$password" "$http/" \
    --data-binary "SELECT count() FROM system.settings WHERE (name, value) IN ($pairs)" 2>/dev/null || true)
  if [ "$seen" = "${#settings[@]}" ]; then
    exit 0
  fi
  sleep 0.5
done
echo "clickhouse-users: user $user cannot log in to $http with its profile after 30 s" >&2
exit 1
