-- Suppliers share the customer body: the same read table shape.
create table suppliers_view (like customers_view including all);
