-- Extensions the schema relies on.
create extension if not exists pgcrypto;
