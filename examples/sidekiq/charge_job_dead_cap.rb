# frozen_string_literal: true

# charge_job_fixed.rb with a dead set capped at 2 jobs, for drill-dead-cap.yaml:
#
#   sidekiq -r ./charge_job_dead_cap.rb -q <queue> -c 5
#
# Sidekiq's dead set is capped by dead_max_jobs (default 10,000) and
# dead_timeout_in_seconds (default 6 months): DeadSet#kill trims it on every
# new dead job, dropping the oldest without a log line. The cap counts every
# queue's dead jobs, and keeps one fewer than it says: ZREMRANGEBYRANK dead 0
# -dead_max_jobs leaves dead_max_jobs - 1.
require_relative "charge_job_fixed"

Sidekiq.configure_server do |config|
  config.options[:dead_max_jobs] = 2
end
