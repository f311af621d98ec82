"""The HTTP and websocket doors (FastAPI): the app, one router per resource with a
response model on every route, the role guard, bounded bodies and secure headers, the
pages and the registry imports. Thin: the rules live in the packages below. May import
`push` and every package below it; never `service` or `cli`."""
