// quic-go peer for the loadbench benchmarks: HTTP/3 (quic-go's http3.Server) on UDP, and the same
// handler over TLS on TCP (net/http: HTTP/1.1 and ALPN h2), so one program compares h1/h2/h3.
//
//	loadbench-peer-quicgo PORT CERT KEY    h3 on udp 127.0.0.1:PORT, h1+h2 on tcp 127.0.0.1:PORT
//
// Workers: GOMAXPROCS (read by the Go runtime). Routes are the Go peer's (bench/peers/go), which
// mirror the Beast reference server: GET / and /plaintext -> "Hello, World!\n" text/plain,
// GET /json -> {"message":"Hello, World!"} (encoding/json per request), POST /echo -> the body back
// with its content type, other paths -> 404, a known path with a wrong method -> 405.
//
// Its own exact count, for tests that check the generator against the server: every response the
// handler wrote, per protocol, printed as one line on stderr when SIGTERM (or SIGINT) ends it:
//
//	loadbench-peer-quicgo: responses h3=N tcp=M
package main

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"

	"github.com/quic-go/quic-go/http3"
)

var plaintext = []byte("Hello, World!\n")
var routes = map[string]string{"/": "GET", "/plaintext": "GET", "/json": "GET", "/echo": "POST"}

type message struct {
	Message string `json:"message"`
}

// Responses written, by the protocol they went out on (ProtoMajor 3 is HTTP/3).
var h3Responses, tcpResponses atomic.Int64

func answer(w http.ResponseWriter, r *http.Request, status int, contentType string, body []byte) {
	h := w.Header()
	h["Content-Type"] = []string{contentType}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	w.Write(body)
	if r.ProtoMajor == 3 {
		h3Responses.Add(1)
	} else {
		tcpResponses.Add(1)
	}
}

func handle(w http.ResponseWriter, r *http.Request) {
	want, known := routes[r.URL.Path]
	switch {
	case !known:
		answer(w, r, http.StatusNotFound, "text/plain", []byte("Not Found\n"))
	case r.Method != want:
		w.Header().Set("Allow", want)
		answer(w, r, http.StatusMethodNotAllowed, "text/plain", []byte("Method Not Allowed\n"))
	case r.URL.Path == "/json":
		body, _ := json.Marshal(message{Message: "Hello, World!"})
		answer(w, r, http.StatusOK, "application/json", body)
	case r.URL.Path == "/echo":
		body, err := io.ReadAll(r.Body)
		if err != nil {
			answer(w, r, http.StatusBadRequest, "text/plain", []byte("Bad Request\n"))
			return
		}
		ctype := r.Header.Get("Content-Type")
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		answer(w, r, http.StatusOK, ctype, body)
	default:
		answer(w, r, http.StatusOK, "text/plain", plaintext)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "loadbench-peer-quicgo: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: loadbench-peer-quicgo PORT CERT KEY   (GOMAXPROCS=N)")
		os.Exit(2)
	}
	if _, err := strconv.Atoi(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "loadbench-peer-quicgo: PORT must be a number")
		os.Exit(2)
	}
	addr := "127.0.0.1:" + os.Args[1]
	cert, err := tls.LoadX509KeyPair(os.Args[2], os.Args[3])
	if err != nil {
		fail("cannot load the certificate: %v", err)
	}
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}}
	handler := http.HandlerFunc(handle)

	// Both listeners are bound before serving, so a port already taken is an error at start.
	udp, err := net.ListenPacket("udp", addr)
	if err != nil {
		fail("udp %s: %v", addr, err)
	}
	tcp, err := net.Listen("tcp", addr)
	if err != nil {
		fail("tcp %s: %v", addr, err)
	}
	h3 := &http3.Server{Handler: handler, TLSConfig: http3.ConfigureTLSConfig(tlsConfig)}
	h12 := &http.Server{Handler: handler, TLSConfig: tlsConfig.Clone()}
	go func() { fail("http3: %v", h3.Serve(udp)) }()
	go func() { fail("https: %v", h12.ServeTLS(tcp, "", "")) }()

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
	// The count is of responses already written: a request still in flight at SIGTERM is not one.
	fmt.Fprintf(os.Stderr, "loadbench-peer-quicgo: responses h3=%d tcp=%d\n",
		h3Responses.Load(), tcpResponses.Load())
	os.Exit(0)
}
