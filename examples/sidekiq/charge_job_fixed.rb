# frozen_string_literal: true

# The payment worker of charge_job.rb, as a senior engineer leaves it: the same
# Sidekiq::Worker, run the same way,
#
#   sidekiq -r ./charge_job_fixed.rb -q <queue> -c 5
#
# Every change is marked FIX with the failure it prevents; drill-fixed.yaml
# checks each from outside. Written against Sidekiq 6.4.1 (OSS).
#
# Environment: REDIS_URL (Sidekiq reads it itself), PAYMENT_URL, TIME_SCALE
# (scenario seconds per wall second, default 1: every timeout and backoff
# below is divided by it), FAULTLINE_WORKER (this process's stable name: it
# names the process's working list, so a restarted process must keep it;
# default the host name).
require "sidekiq"
require "sidekiq/api"
require "net/http"
require "json"
require "socket"

SCALE = Float(ENV.fetch("TIME_SCALE", "1"))
MAX_RETRIES = 3 # after the first attempt: 4 calls at most

# How a failed charge ends. Anything else raised (a timeout, a refused or cut
# connection) is transient, like PaymentUnavailable: Sidekiq retries it.
class PaymentUnavailable < StandardError; end # 5xx, 408, 429: retry
class PaymentDeclined < StandardError; end    # 402: the card says no, for good
class PaymentRejected < StandardError; end    # 401/403 and other 4xx: retrying cannot help

class ChargeJob
  include Sidekiq::Worker

  TIMEOUT = 2.0 / SCALE

  # FIX: Sidekiq retries 25 times over about three weeks by default: a declined
  # card or an outage surfaces in the dead set weeks later, if ever. Three
  # retries. (A producer that pushes by class name -- Sidekiq::Client.push
  # with "class" => "ChargeJob", as another app or faultline's preset does --
  # sends "retry" => true unless it gives a number, and that overrides
  # sidekiq_options: max_retries in the server config below holds then.)
  sidekiq_options retry: MAX_RETRIES

  # FIX: Sidekiq's default backoff waits 15 s, then 16 s, 31 s, 96 s...: here
  # 3, 6, 12 s, so the first retry comes after a 3 s outage is over, and a job
  # settles within a minute. Sidekiq adds rand(10) * (count + 1) whole seconds
  # of jitter to whatever this returns, and truncates it to whole seconds (a
  # value under 1 falls back to the default), so at a time scale the jitter
  # does not shrink.
  sidekiq_retry_in do |count, _error|
    [(3 * 2**count / SCALE).ceil, 1].max
  end

  def perform(job)
    uri = URI(ENV.fetch("PAYMENT_URL"))
    # FIX: the Idempotency-Key makes a retry of a charge that went through
    # (the answer lost to a timeout, a 5xx after the fact, a process killed
    # mid-call) a replay, not a second charge.
    headers = {"Content-Type" => "application/json", "X-Faultline-Job" => job["id"],
               "Idempotency-Key" => (job["idempotency_key"].to_s.empty? ? job["id"] : job["idempotency_key"])}
    response = Net::HTTP.start(uri.host, uri.port, open_timeout: TIMEOUT, read_timeout: TIMEOUT) do |http|
      http.post(uri.path, JSON.generate(job["payload"]), headers)
    end
    raise failure(response) unless response.is_a?(Net::HTTPSuccess)
    logger.info "charged #{job["id"]}"
  end

  # FIX: the default raises the same error for every non-2xx, so a declined
  # card is retried (25 times: each retry a new charge attempt the issuer
  # sees). Classify the answer.
  def failure(response)
    code = response.code.to_i
    body = response.body.to_s[0, 300]
    case code
    when 402
      reason = begin
        JSON.parse(body).dig("error", "decline_code")
      rescue JSON::ParserError
        nil
      end
      PaymentDeclined.new("card declined: #{reason || "card_declined"} (HTTP 402)")
    when 408, 429, 500..599 then PaymentUnavailable.new("HTTP #{code}: #{body}")
    else PaymentRejected.new("HTTP #{code}: #{body}")
    end
  end
end

# FIX: a permanent failure goes to the dead set at once, with what Sidekiq's
# own retry writes (error_message, error_class, failed_at, retry_count), and
# is never called again. Sidekiq 6.4 has no way to say so from the job
# (sidekiq_retry_in returning :kill came in 6.5; a job's "retry" is fixed when
# it is pushed), so a server middleware catches those errors and kills the job
# through Sidekiq's own DeadSet#kill. The job then counts as processed.
class DeadOnPermanentFailure
  PERMANENT = [PaymentDeclined, PaymentRejected].freeze

  def call(_worker, job, _queue)
    yield
  rescue *PERMANENT => e
    now = Time.now.to_f
    dead = job.merge("error_message" => e.message, "error_class" => e.class.name)
    if job["retry_count"] # it failed before: retry_count counts the retries made
      dead["retried_at"] = now
      dead["retry_count"] = job["retry_count"] + 1
    else
      dead["failed_at"] = now
      dead["retry_count"] = 0
    end
    Sidekiq::DeadSet.new.kill(Sidekiq.dump_json(dead), notify_failure: false)
    Sidekiq.logger.warn "dead at once: #{job["class"]} #{job["jid"]}: #{e.class}: #{e.message}"
  end
end

# FIX: Sidekiq OSS fetches with BRPOP: the job leaves Redis the moment a
# process takes it, so a process killed -9 (an OOM kill, a node lost) loses
# every job it holds. (Sidekiq Pro's super_fetch is the paid fix.) This fetch
# moves each job atomically (BLMOVE) into a working list of this process,
# queue:<queue>:working:<name>, removes it from there only when Sidekiq is
# done with it (charged, or written to the retry or dead set), and on boot
# puts back on the queue whatever the process's previous life held. <name> is
# the process's stable name: a restarted process must keep it, and no two
# live processes may share it.
class ReliableFetch
  TIMEOUT = 2 # seconds a fetch blocks, so a stopping processor notices (as BasicFetch)

  UnitOfWork = Struct.new(:queue, :job, :working) do
    def acknowledge
      Sidekiq.redis { |conn| conn.lrem(working, 1, job) }
    end

    def queue_name
      queue.delete_prefix("queue:")
    end

    def requeue
      Sidekiq.redis do |conn|
        conn.multi do |t|
          t.rpush(queue, job)
          t.lrem(working, 1, job)
        end
      end
    end
  end

  def initialize(options)
    name = ENV["FAULTLINE_WORKER"].to_s
    name = Socket.gethostname if name.empty?
    @queues = options[:queues].uniq.map { |q| ["queue:#{q}", "queue:#{q}:working:#{name}"] }
    recover
  end

  def retrieve_work
    @queues.each do |queue, working|
      job = Sidekiq.redis { |conn| conn.lmove(queue, working, "RIGHT", "LEFT") }
      return UnitOfWork.new(queue, job, working) if job
    end
    queue, working = @queues.first
    job = Sidekiq.redis { |conn| conn.blmove(queue, working, "RIGHT", "LEFT", timeout: TIMEOUT) }
    UnitOfWork.new(queue, job, working) if job
  end

  # Sidekiq calls this on shutdown with the jobs its processors could not
  # finish in time.
  def bulk_requeue(inprogress, _options)
    inprogress.each(&:requeue)
    Sidekiq.logger.info("Pushed #{inprogress.size} jobs back to Redis") unless inprogress.empty?
  end

  private

  def recover
    @queues.each do |queue, working|
      n = 0
      n += 1 while Sidekiq.redis { |conn| conn.lmove(working, queue, "RIGHT", "RIGHT") }
      Sidekiq.logger.warn("recovered #{n} job(s) from #{working}") if n > 0
    end
  end
end

Sidekiq.configure_server do |config|
  config.server_middleware { |chain| chain.add DeadOnPermanentFailure }
  # FIX (see sidekiq_options above): the retry count for jobs pushed with
  # "retry" => true, whatever class they name.
  config.options[:max_retries] = MAX_RETRIES
  # FIX: the retry set is polled every 5 s per process on average (x the
  # number of processes, +-50%): a retry due in 3 s may wait 10 more. Once a
  # second, shared by the processes.
  config.average_scheduled_poll_interval = 1.0 / SCALE
  # Sidekiq 6.4 takes a fetch strategy as an instance in options[:fetch],
  # built once the queues (-q) are known.
  config.on(:startup) { config.options[:fetch] = ReliableFetch.new(config.options) }
end
