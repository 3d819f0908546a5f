module github.com/ratekit/limiter

go 1.24.0

require (
	github.com/benbjohnson/clock v1.3.5
	github.com/redis/go-redis/v9 v9.22.0
	github.com/stretchr/testify v1.12.1
	golang.org/x/time v0.14.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.30.0 // indirect
)
