-- Whether a variant is active, beside its product type: stock movements, counts and transfers refuse an
-- inactive product as they refuse one of another organization (404), and read it here, in the statement
-- that reads the types. Kept by every write of the group, as the other columns are; set here from each
-- group's latest event that carries the variant (a whole group, or a partial event naming it).
alter table product_variants add column is_active boolean not null default true;
update product_variants v set is_active = latest.is_active
from (select distinct on (variant_id) variant_id, is_active
      from (select (variant->>'id')::uuid as variant_id, (variant->>'is_active')::boolean as is_active, e.position
            from events e cross join lateral json_array_elements(e.data->'variants') variant
            where e.stream_type = 'product') carried
      order by variant_id, position desc) latest
where latest.variant_id = v.variant_id and not latest.is_active;
