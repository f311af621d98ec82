"""The HTTP and websocket doors (FastAPI): the app, its routes by resource, bearer
tokens and roles, rate limits, bounded bodies and secure headers, the pages and the
registry imports. Thin: the rules live in the packages below."""
