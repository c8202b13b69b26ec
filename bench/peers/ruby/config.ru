# The Ruby peer's Rack app (run by puma, bench/peers/ruby/run.sh): the routes every peer serves.
# GET / and /plaintext -> "Hello, World!\n" text/plain, GET /json -> {"message":"Hello, World!"}
# (JSON.generate per request), POST /echo -> the body back with its content type, other paths 404,
# a known path with another method 405. A bare lambda, no framework: what is measured is puma,
# Rack and the interpreter, as hypercorn + asgi_app.py is for Python.
require "json"

PLAINTEXT = "Hello, World!\n".freeze
ROUTES = { "/" => "GET", "/plaintext" => "GET", "/json" => "GET", "/echo" => "POST" }.freeze

def answer(status, type, body)
  [status, { "Content-Type" => type, "Content-Length" => body.bytesize.to_s }, [body]]
end

run(lambda do |env|
  path = env["PATH_INFO"]
  want = ROUTES[path]
  if want.nil?
    answer(404, "text/plain", "Not Found\n")
  elsif env["REQUEST_METHOD"] != want
    status, headers, body = answer(405, "text/plain", "Method Not Allowed\n")
    [status, headers.merge("Allow" => want), body]
  elsif path == "/json"
    answer(200, "application/json", JSON.generate({ "message" => "Hello, World!" }))
  elsif path == "/echo"
    answer(200, env["CONTENT_TYPE"] || "application/octet-stream", env["rack.input"].read)
  else
    answer(200, "text/plain", PLAINTEXT)
  end
end)
