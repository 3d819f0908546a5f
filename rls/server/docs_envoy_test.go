package server

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// envoyRateLimit is the part of Envoy's config.route.v3.RateLimit the snippet sets, under
// its proto field names (go-control-plane's route_components.pb.go): the parse below is
// strict, so a misspelt field fails. (go-control-plane's own route types would check the
// whole snippet, but they pull in a module this one does not otherwise need.)
type envoyRateLimit struct {
	Actions []struct {
		RequestHeaders struct {
			HeaderName    string `yaml:"header_name"`
			DescriptorKey string `yaml:"descriptor_key"`
		} `yaml:"request_headers"`
	} `yaml:"actions"`
	HitsAddend *struct {
		Number *uint64 `yaml:"number"`
		Format string  `yaml:"format"`
	} `yaml:"hits_addend"`
	ApplyOnStreamDone bool `yaml:"apply_on_stream_done"`
}

// TestDocsEnvoyUsageConfig reads the Envoy snippet of docs/rls.md's usage-based limits:
// the rate limit filter's per-route config (the only place Envoy reads hits_addend) with two
// entries of one descriptor, a look before the request (hits_addend 0, set: left out it
// would be 1) and the usage on the stream's end.
func TestDocsEnvoyUsageConfig(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/rls.md")
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(b), "<!-- a test parses this block (rls/server TestDocsEnvoyUsageConfig) -->\n```yaml\n")
	require.True(t, ok, "the marked block is gone from docs/rls.md")
	block, _, ok := strings.Cut(after, "```")
	require.True(t, ok)

	var doc struct {
		RouteConfig struct {
			VirtualHosts []struct {
				Name    string   `yaml:"name"`
				Domains []string `yaml:"domains"`
				Routes  []struct {
					Match                map[string]string `yaml:"match"`
					Route                map[string]string `yaml:"route"`
					TypedPerFilterConfig map[string]struct {
						Type       string           `yaml:"@type"`
						RateLimits []envoyRateLimit `yaml:"rate_limits"`
					} `yaml:"typed_per_filter_config"`
				} `yaml:"routes"`
			} `yaml:"virtual_hosts"`
		} `yaml:"route_config"`
	}
	dec := yaml.NewDecoder(strings.NewReader(block))
	dec.KnownFields(true)
	require.NoError(t, dec.Decode(&doc))
	per, ok := doc.RouteConfig.VirtualHosts[0].Routes[0].TypedPerFilterConfig["envoy.filters.http.ratelimit"]
	require.True(t, ok)
	assert.Equal(t, "type.googleapis.com/envoy.extensions.filters.http.ratelimit.v3.RateLimitPerRoute", per.Type)
	require.Len(t, per.RateLimits, 2)
	check, report := per.RateLimits[0], per.RateLimits[1]
	assert.False(t, check.ApplyOnStreamDone)
	require.NotNil(t, check.HitsAddend)
	require.NotNil(t, check.HitsAddend.Number, "the look's 0 is set")
	assert.Equal(t, uint64(0), *check.HitsAddend.Number)
	assert.True(t, report.ApplyOnStreamDone)
	require.NotNil(t, report.HitsAddend)
	assert.Nil(t, report.HitsAddend.Number, "one of number and format")
	assert.Equal(t, "%DYNAMIC_METADATA(io.envoy.ai_gateway:llm_total_token)%", report.HitsAddend.Format)
	assert.Equal(t, check.Actions, report.Actions, "both name the same descriptor")
	assert.Equal(t, "api_key", check.Actions[0].RequestHeaders.DescriptorKey, "the key of the ratekitd rule shown beside it")

	// The ratekitd side shown beside it loads, as a charge rule of that key.
	_, after, ok = strings.Cut(string(b), "```yaml\ndomain: llm\n")
	require.True(t, ok, "the ratekitd block of the usage-based limits is gone from docs/rls.md")
	block, _, _ = strings.Cut(after, "```")
	cfg, _ := loadConfig(t, "domain: llm\n"+block)
	r, _, _ := cfg.domains["llm"].match([]entry{{"api_key", "k"}})
	require.NotNil(t, r)
	assert.True(t, r.Charge)
}
