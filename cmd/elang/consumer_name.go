package main

import (
	"fmt"
	"os"
	"strings"
)

// defaultConsumer names this worker in its group: host and pid, in [A-Za-z0-9._:-].
func defaultConsumer() string {
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '-'
	}, host)
	if host == "" {
		host = "host"
	}
	if len(host) > 40 {
		host = host[:40]
	}
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}
