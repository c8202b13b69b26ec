// loadbench-h3-quicgo: a closed-loop HTTP/3 load client on quic-go's http3 package, the quic-go
// anchor of bench/h3_generator_cost.py. -c connections (one QUIC connection each, one request
// at a time), -d seconds; prints one JSON line with its own exact counts.
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go/http3"
)

func main() {
	connections := flag.Int("c", 1, "connections (one QUIC connection each)")
	seconds := flag.Float64("d", 10, "seconds")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: loadbench-h3-quicgo [-c N] [-d SECONDS] https://HOST:PORT/PATH")
		os.Exit(2)
	}
	url := flag.Arg(0)
	var responses, non2xx, errors atomic.Int64
	deadline := time.Now().Add(time.Duration(*seconds * float64(time.Second)))
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < *connections; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// a transport per worker: one QUIC connection each, as the other tools' -c
			transport := &http3.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
			defer transport.Close()
			client := &http.Client{Transport: transport}
			for time.Now().Before(deadline) {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						errors.Add(1)
					}
					continue
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil {
					if ctx.Err() == nil {
						errors.Add(1)
					}
					continue
				}
				responses.Add(1)
				if resp.StatusCode >= 300 {
					non2xx.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	out, _ := json.Marshal(map[string]any{
		"responses":  responses.Load(),
		"non_2xx":    non2xx.Load(),
		"errors":     errors.Load(),
		"duration_s": time.Since(start).Seconds(),
	})
	fmt.Println(string(out))
}
