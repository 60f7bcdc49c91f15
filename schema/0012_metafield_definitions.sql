-- Product custom field definitions: a configuration resource like the others.
create table metafield_definitions_view (like payment_methods_view including all);
