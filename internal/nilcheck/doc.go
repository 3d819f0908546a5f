// Package nilcheck tells the constructors of the module whether an interface argument is
// nil, including a typed nil (a nil *redis.Client in a redis.UniversalClient, a nil
// *local.Store in a store.Store), which a comparison with nil does not catch and which
// would otherwise panic at first use.
package nilcheck
