# frozen_string_literal: true

# The payment worker as Sidekiq's getting-started guide teaches it: a class
# including Sidekiq::Worker, run by
#
#   sidekiq -r ./charge_job.rb -q <queue> -c 5
#
# with Sidekiq's defaults everywhere (written against Sidekiq 6.4.1). A job's
# one argument is faultline's job document {"id", "task", "payload",
# "idempotency_key"}. Compare charge_job_fixed.rb.
#
# Environment: REDIS_URL (Sidekiq reads it itself), PAYMENT_URL, TIME_SCALE
# (scenario seconds per wall second, default 1: the timeout below is divided
# by it).
require "sidekiq"
require "net/http"
require "json"

class ChargeJob
  include Sidekiq::Worker

  TIMEOUT = 2.0 / Float(ENV.fetch("TIME_SCALE", "1"))

  def perform(job)
    uri = URI(ENV.fetch("PAYMENT_URL"))
    response = Net::HTTP.start(uri.host, uri.port, open_timeout: TIMEOUT, read_timeout: TIMEOUT) do |http|
      http.post(uri.path, JSON.generate(job["payload"]),
        "Content-Type" => "application/json", "X-Faultline-Job" => job["id"])
    end
    # Anything but a 2xx raises, and Sidekiq retries it.
    raise "payment failed: HTTP #{response.code} #{response.body}" unless response.is_a?(Net::HTTPSuccess)
    logger.info "charged #{job["id"]}"
  end
end
