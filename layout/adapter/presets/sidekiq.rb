# frozen_string_literal: true

# faultline's adapter for Sidekiq: the program behind `inject: {preset: sidekiq}`
# and `dlq: {preset: sidekiq}`. Written against Sidekiq 6.4.1 (Ruby 3.1,
# redis-rb 4.8); run as `ruby sidekiq.rb MODE`.
#
#   version  prints "sidekiq <version>"; exits 1 if Sidekiq cannot be loaded.
#   inject   reads job documents, one JSON object a line, on stdin, and pushes
#            each with Sidekiq::Client.push -- exactly what a producer's
#            ChargeJob.perform_async does -- as
#              {"class" => FAULTLINE_PRESET_JOB, "queue" => FAULTLINE_PRESET_QUEUE,
#               "jid" => the document's id, "args" => [the document]}
#            merged over FAULTLINE_PRESET_OPTIONS (e.g. {"retry": 3}). Sidekiq
#            LPUSHes it onto the list queue:<queue> and adds <queue> to the set
#            queues. Answers one line per line read: "ok" or the error.
#   dlq      prints every member of Sidekiq's dead set (the sorted set "dead",
#            shared by every queue) whose queue is FAULTLINE_PRESET_QUEUE, one
#            JSON line each, read with one ZRANGE (atomic):
#              {"id": jid, "job": args[0], "error": "<error_class>: <error_message>",
#               "error_class", "retries", "attempts", "failed_at", "died_at",
#               "status": "dead", "class"}
#            "retries" is Sidekiq's retry_count: the retries made after the
#            first attempt (0: the job died at its first failure), so
#            "attempts" = retries + 1. "failed_at" is Sidekiq's failed_at, the
#            job's FIRST failure; "died_at" is the entry's score, when it was
#            put in the dead set. A member that is not a Sidekiq job's JSON is
#            printed as {"raw": ..., "error": "could not decode: ..."}.
#   ready    exits 0 when at least FAULTLINE_PRESET_COPIES (default 1) Sidekiq
#            processes are registered (the set "processes", each one's hash
#            <identity> with a live heartbeat) and consume the queue (the
#            "queues" of their "info"), not quiet; else exits 1 saying what
#            it saw.
#
# Environment: FAULTLINE_REDIS_URL, FAULTLINE_PRESET_QUEUE (default "default"),
# FAULTLINE_PRESET_JOB ("{task}" is the document's task; empty: the task),
# FAULTLINE_PRESET_OPTIONS (a JSON object), FAULTLINE_PRESET_COPIES, and
# FAULTLINE_PRESET_DIR (default the working directory): if it holds a Gemfile,
# Sidekiq is loaded through Bundler from it, the team's pinned version.
#
# What it writes to Redis: inject only, through Sidekiq's client (queue:<queue>,
# queues). dlq and ready only read.

require "json"
require "time"
require "logger"

MODES = %w[version inject dlq ready].freeze

def die(message)
  warn "sidekiq preset: #{text(message.to_s).gsub(/\s+/, " ")}"
  exit 1
end

def load_sidekiq
  dir = ENV["FAULTLINE_PRESET_DIR"].to_s
  dir = Dir.pwd if dir.empty?
  gemfile = File.join(dir, "Gemfile")
  if File.file?(gemfile)
    ENV["BUNDLE_GEMFILE"] = gemfile
    require "bundler/setup"
  end
  require "sidekiq"
  require "sidekiq/api"
rescue LoadError, StandardError => e
  die "cannot load Sidekiq (#{e.class}: #{e.message})"
end

# connect points Sidekiq's client at FAULTLINE_REDIS_URL with one connection,
# and sends Sidekiq's log lines (it logs the connection) to stderr: stdout is
# the protocol's.
def connect(timeout: 5)
  url = ENV["FAULTLINE_REDIS_URL"].to_s
  die "FAULTLINE_REDIS_URL is not set" if url.empty?
  Sidekiq.logger = Logger.new($stderr, level: Logger::WARN)
  Sidekiq.redis = {url: url, size: 1, timeout: timeout}
end

def queue_name
  q = ENV["FAULTLINE_PRESET_QUEUE"].to_s
  q.empty? ? "default" : q
end

def one_line(error, max = 500)
  text("#{error.class}: #{error.message}").gsub(/\s+/, " ").strip[0, max]
end

# text is bytes as valid UTF-8 (what JSON can carry): invalid bytes become U+FFFD.
def text(bytes)
  bytes.dup.force_encoding(Encoding::UTF_8).scrub
end

# --- inject -----------------------------------------------------------------

def job_options
  raw = ENV["FAULTLINE_PRESET_OPTIONS"].to_s
  return {} if raw.strip.empty?
  opts = JSON.parse(raw)
  die "FAULTLINE_PRESET_OPTIONS is not a JSON object: #{raw}" unless opts.is_a?(Hash)
  opts
rescue JSON::ParserError => e
  die "FAULTLINE_PRESET_OPTIONS: #{e.message}"
end

def push(line, queue, job, options)
  doc = JSON.parse(line)
  raise ArgumentError, "the job document is not a JSON object" unless doc.is_a?(Hash)
  id = doc["id"]
  raise ArgumentError, "the job document has no id" unless id.is_a?(String) && !id.empty?
  task = doc["task"].to_s
  klass = job.empty? ? task : job.gsub("{task}", task)
  raise ArgumentError, "no job class: FAULTLINE_PRESET_JOB is empty and the document has no task" if klass.empty?
  # The job's identity wins over the options: its class, its queue, its jid
  # (faultline's id) and its one argument (the document).
  item = options.merge("class" => klass, "queue" => queue, "jid" => id, "args" => [doc])
  jid = Sidekiq::Client.push(item)
  raise "a client middleware stopped the push" if jid.nil?
end

def inject
  connect
  queue = queue_name
  job = ENV["FAULTLINE_PRESET_JOB"].to_s
  options = job_options
  $stdout.sync = true
  $stdin.each_line do |line|
    answer =
      if line.strip.empty?
        "empty line: no job document"
      else
        begin
          push(line, queue, job, options)
          "ok"
        rescue => e
          one_line(e)
        end
      end
    $stdout.puts(answer)
  end
end

# --- dlq --------------------------------------------------------------------

# rfc3339 is a Sidekiq timestamp (epoch seconds as a float; a value too big to
# be seconds is read as milliseconds, as later Sidekiq versions write them).
def rfc3339(epoch)
  return nil unless epoch.is_a?(Numeric)
  epoch /= 1000.0 if epoch > 100_000_000_000
  Time.at(epoch).utc.iso8601(3)
end

def entry(member, score, queue)
  job = JSON.parse(member)
  return {"raw" => text(member), "error" => "could not decode: not a Sidekiq job (a JSON object with a queue)"} unless job.is_a?(Hash) && job["queue"].is_a?(String)
  return nil unless job["queue"] == queue

  args = job["args"]
  out = {"id" => job["jid"], "job" => (args.is_a?(Array) && args.size == 1) ? args[0] : args}
  klass, message = job["error_class"], job["error_message"]
  out["error"] = [klass, message].compact.join(": ") if klass || message
  out["error_class"] = klass if klass
  if job["retry_count"].is_a?(Integer)
    out["retries"] = job["retry_count"]
    out["attempts"] = job["retry_count"] + 1
  end
  failed_at = rfc3339(job["failed_at"])
  out["failed_at"] = failed_at if failed_at
  out["died_at"] = rfc3339(score)
  out["status"] = "dead"
  out["class"] = job["class"]
  out
rescue JSON::ParserError => e
  {"raw" => text(member), "error" => "could not decode: #{one_line(e)}"}
end

def dlq
  connect
  queue = queue_name
  # One ZRANGE of the whole set: one state of it, never a page of a set that
  # changes between two reads.
  members = Sidekiq.redis { |conn| conn.zrange("dead", 0, -1, with_scores: true) }
  out = +""
  members.each do |member, score|
    e = entry(member, score, queue)
    out << JSON.generate(e) << "\n" if e
  end
  $stdout.write(out)
rescue Redis::BaseError => e
  die "read the dead set: #{one_line(e)}"
end

# --- ready ------------------------------------------------------------------

def ready
  connect(timeout: 0.8)
  queue = queue_name
  want = Integer(ENV["FAULTLINE_PRESET_COPIES"].to_s.then { |s| s.empty? ? "1" : s }, 10)
  seen = []
  up = 0
  Sidekiq.redis do |conn|
    identities = conn.smembers("processes").sort
    hashes = conn.pipelined { |p| identities.each { |id| p.hmget(id, "info", "quiet") } }
    identities.zip(hashes).each do |identity, (info, quiet)|
      if info.nil? # the hash expired: a process that stopped beating (killed)
        seen << "#{identity} (no heartbeat)"
        next
      end
      queues = JSON.parse(info)["queues"] || []
      consuming = queues.include?(queue) && quiet != "true"
      up += 1 if consuming
      seen << "#{identity} #{queues.inspect}#{" quiet" if quiet == "true"}"
    end
  end
  exit 0 if up >= want
  warn "sidekiq preset: #{up} of #{want} Sidekiq process(es) consuming queue #{queue}; " \
       "processes: #{seen.empty? ? "none" : seen.join(", ")}"
  exit 1
rescue ArgumentError
  die "FAULTLINE_PRESET_COPIES is not a number: #{ENV["FAULTLINE_PRESET_COPIES"]}"
rescue Redis::BaseError, JSON::ParserError => e
  die "read the processes: #{one_line(e)}"
end

# --- main -------------------------------------------------------------------

mode = ARGV[0]
die "usage: ruby sidekiq.rb #{MODES.join("|")}" unless MODES.include?(mode)
load_sidekiq
case mode
when "version" then puts "sidekiq #{Sidekiq::VERSION}"
when "inject" then inject
when "dlq" then dlq
when "ready" then ready
end
